//! Running a system crontab's command as the user its line names, as cronie does: the
//! user's groups (`getgrouplist(3)`, what `initgroups(3)` sets), group and user id set in
//! the child before `exec`, and `HOME`, `LOGNAME` and `USER` from the password database.

use std::ffi::CString;
use std::path::PathBuf;

use nix::unistd::{Gid, Uid, User, getgrouplist, setgid, setgroups, setuid};

/// Whom the daemon itself runs as: its effective user id and that user's name.
#[derive(Debug, Clone)]
pub struct Me {
    /// The effective user id.
    pub uid: Uid,
    /// Its name in the password database; `None` if it has none.
    pub name: Option<String>,
}

impl Me {
    /// The daemon's user.
    pub fn now() -> Self {
        let uid = Uid::effective();
        let name = User::from_uid(uid).ok().flatten().map(|user| user.name);
        Self { uid, name }
    }

    /// Whether `user` is the daemon's own user (so its commands need no switch).
    pub fn is(&self, user: &str) -> bool {
        self.name.as_deref() == Some(user)
    }
}

/// A user a command is switched to, looked up when the run starts (so that each host's
/// password database decides, at the time of the run).
#[derive(Debug)]
pub struct Switch {
    uid: Uid,
    gid: Gid,
    groups: Vec<Gid>,
    /// Whether the daemon runs as another user, so the child must switch.
    needed: bool,
    /// `HOME`, `LOGNAME` and `USER`, as cron sets them (also for the daemon's own user).
    env: [(&'static str, String); 3],
}

impl Switch {
    /// The switch to `name`: its environment, and the change of user unless the daemon
    /// already runs as `name`.
    ///
    /// # Errors
    /// No such user on this host, or its groups cannot be read.
    pub fn to(name: &str) -> Result<Self, String> {
        let needed = !Me::now().is(name);
        let user = match User::from_name(name) {
            Ok(Some(user)) => user,
            Ok(None) => return Err(format!("no user {name:?} on this host")),
            Err(e) => return Err(format!("cannot look up the user {name:?}: {e}")),
        };
        let c_name = CString::new(name).map_err(|_| format!("the user name {name:?} holds a NUL byte"))?;
        let groups = getgrouplist(&c_name, user.gid)
            .map_err(|e| format!("cannot read the groups of {name:?}: {e}"))?;
        let home = PathBuf::from(&user.dir).display().to_string();
        let env = [("HOME", home), ("LOGNAME", name.to_owned()), ("USER", name.to_owned())];
        Ok(Self { uid: user.uid, gid: user.gid, groups, needed, env })
    }

    /// Gives `command` the user's environment and, if needed, makes its child drop to
    /// this user before `exec`.
    pub fn apply(self, command: &mut tokio::process::Command) {
        let Self { uid, gid, groups, needed, env } = self;
        command.envs(env);
        if !needed {
            return;
        }
        // SAFETY: the closure runs in the forked child, where only async-signal-safe calls
        // are allowed: setgroups(2), setgid(2) and setuid(2) are plain system calls, and
        // it allocates nothing (the groups were read before the fork).
        unsafe {
            command.pre_exec(move || {
                setgroups(&groups)?;
                setgid(gid)?;
                setuid(uid)?;
                Ok(())
            });
        }
    }
}
