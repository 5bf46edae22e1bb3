//! Query parameters read from text, so that a bad value gets a message naming the
//! parameter, the value and what is allowed (the deserializer's own words say less).

use crate::ApiError;

/// `limit`: a whole number from 1 to `max`; `default` when absent.
pub(crate) fn limit(text: Option<&str>, default: usize, max: usize) -> Result<usize, ApiError> {
    let Some(text) = text else { return Ok(default) };
    match text.parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(ApiError::bad_request(format!("limit {text:?} must be a whole number from 1 to {max}"))),
    }
}

/// The value of parameter `name` spelled `text` among `choices` (spelling, value).
pub(crate) fn choice<T: Copy>(name: &str, text: &str, choices: &[(&str, T)]) -> Result<T, ApiError> {
    choices.iter().find(|(spelling, _)| *spelling == text).map(|(_, value)| *value).ok_or_else(|| {
        let allowed: Vec<&str> = choices.iter().map(|(spelling, _)| *spelling).collect();
        ApiError::bad_request(format!("{name} {text:?} is not one of: {}", allowed.join(", ")))
    })
}
