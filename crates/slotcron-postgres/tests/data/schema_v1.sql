-- A schema at version 1, as slotcron 0.1.0 (commit e70576f) left it: made by opening
-- schema slotcron_v1_fixture with that release, claiming two triggers of job `tick` and the
-- one-shot `migrate` as instance `old-replica` (fencing tokens tick 1, 2 and migrate 1),
-- saving tick's state and appending one run record; then
--   pg_dump --schema=slotcron_v1_fixture --no-owner --no-privileges --column-inserts
-- (PostgreSQL 15.20) without psql's \restrict and \unrestrict lines. Tests load it with
-- the schema name replaced by their own, to check that such a schema migrates forward.
--
-- PostgreSQL database dump
--


-- Dumped from database version 15.20 (Debian 15.20-0+deb12u1)
-- Dumped by pg_dump version 15.20 (Debian 15.20-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: slotcron_v1_fixture; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA slotcron_v1_fixture;


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: claim; Type: TABLE; Schema: slotcron_v1_fixture; Owner: -
--

CREATE TABLE slotcron_v1_fixture.claim (
    job text NOT NULL,
    trigger_key text NOT NULL,
    trigger_at timestamp with time zone NOT NULL,
    instance text NOT NULL,
    claimed_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone
);


--
-- Name: fencing; Type: TABLE; Schema: slotcron_v1_fixture; Owner: -
--

CREATE TABLE slotcron_v1_fixture.fencing (
    job text NOT NULL,
    token bigint NOT NULL
);


--
-- Name: job_definition; Type: TABLE; Schema: slotcron_v1_fixture; Owner: -
--

CREATE TABLE slotcron_v1_fixture.job_definition (
    job text NOT NULL,
    definition jsonb NOT NULL
);


--
-- Name: job_state; Type: TABLE; Schema: slotcron_v1_fixture; Owner: -
--

CREATE TABLE slotcron_v1_fixture.job_state (
    job text NOT NULL,
    last_trigger timestamp with time zone NOT NULL,
    last_outcome text,
    one_shot_done boolean NOT NULL
);


--
-- Name: run_record; Type: TABLE; Schema: slotcron_v1_fixture; Owner: -
--

CREATE TABLE slotcron_v1_fixture.run_record (
    id bigint NOT NULL,
    job text NOT NULL,
    trigger_at timestamp with time zone NOT NULL,
    instance text NOT NULL,
    outcome text NOT NULL,
    fencing_token bigint,
    started_at timestamp with time zone NOT NULL,
    duration_us bigint NOT NULL,
    error text
);


--
-- Name: run_record_id_seq; Type: SEQUENCE; Schema: slotcron_v1_fixture; Owner: -
--

ALTER TABLE slotcron_v1_fixture.run_record ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME slotcron_v1_fixture.run_record_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: schema_version; Type: TABLE; Schema: slotcron_v1_fixture; Owner: -
--

CREATE TABLE slotcron_v1_fixture.schema_version (
    version integer NOT NULL
);


--
-- Data for Name: claim; Type: TABLE DATA; Schema: slotcron_v1_fixture; Owner: -
--

INSERT INTO slotcron_v1_fixture.claim (job, trigger_key, trigger_at, instance, claimed_at, expires_at) VALUES ('tick', 'tick:2024-05-17T00:00:00Z', '2024-05-17 00:00:00+00', 'old-replica', '2026-11-30 17:09:50.200227+00', '2126-11-06 17:09:50.200227+00');
INSERT INTO slotcron_v1_fixture.claim (job, trigger_key, trigger_at, instance, claimed_at, expires_at) VALUES ('tick', 'tick:2024-05-17T00:01:00Z', '2024-05-17 00:01:00+00', 'old-replica', '2026-11-30 17:09:50.202175+00', '2126-11-06 17:09:50.202175+00');
INSERT INTO slotcron_v1_fixture.claim (job, trigger_key, trigger_at, instance, claimed_at, expires_at) VALUES ('migrate', 'migrate', '2024-05-17 00:00:00+00', 'old-replica', '2026-11-30 17:09:50.202718+00', NULL);


--
-- Data for Name: fencing; Type: TABLE DATA; Schema: slotcron_v1_fixture; Owner: -
--

INSERT INTO slotcron_v1_fixture.fencing (job, token) VALUES ('tick', 2);
INSERT INTO slotcron_v1_fixture.fencing (job, token) VALUES ('migrate', 1);


--
-- Data for Name: job_definition; Type: TABLE DATA; Schema: slotcron_v1_fixture; Owner: -
--



--
-- Data for Name: job_state; Type: TABLE DATA; Schema: slotcron_v1_fixture; Owner: -
--

INSERT INTO slotcron_v1_fixture.job_state (job, last_trigger, last_outcome, one_shot_done) VALUES ('tick', '2024-05-17 00:01:00+00', 'succeeded', false);


--
-- Data for Name: run_record; Type: TABLE DATA; Schema: slotcron_v1_fixture; Owner: -
--

INSERT INTO slotcron_v1_fixture.run_record (id, job, trigger_at, instance, outcome, fencing_token, started_at, duration_us, error) OVERRIDING SYSTEM VALUE VALUES (1, 'tick', '2024-05-17 00:01:00+00', 'old-replica', 'succeeded', 2, '2024-05-17 00:01:00+00', 5000, NULL);


--
-- Data for Name: schema_version; Type: TABLE DATA; Schema: slotcron_v1_fixture; Owner: -
--

INSERT INTO slotcron_v1_fixture.schema_version (version) VALUES (1);


--
-- Name: run_record_id_seq; Type: SEQUENCE SET; Schema: slotcron_v1_fixture; Owner: -
--

SELECT pg_catalog.setval('slotcron_v1_fixture.run_record_id_seq', 1, true);


--
-- Name: claim claim_pkey; Type: CONSTRAINT; Schema: slotcron_v1_fixture; Owner: -
--

ALTER TABLE ONLY slotcron_v1_fixture.claim
    ADD CONSTRAINT claim_pkey PRIMARY KEY (job, trigger_key);


--
-- Name: fencing fencing_pkey; Type: CONSTRAINT; Schema: slotcron_v1_fixture; Owner: -
--

ALTER TABLE ONLY slotcron_v1_fixture.fencing
    ADD CONSTRAINT fencing_pkey PRIMARY KEY (job);


--
-- Name: job_definition job_definition_pkey; Type: CONSTRAINT; Schema: slotcron_v1_fixture; Owner: -
--

ALTER TABLE ONLY slotcron_v1_fixture.job_definition
    ADD CONSTRAINT job_definition_pkey PRIMARY KEY (job);


--
-- Name: job_state job_state_pkey; Type: CONSTRAINT; Schema: slotcron_v1_fixture; Owner: -
--

ALTER TABLE ONLY slotcron_v1_fixture.job_state
    ADD CONSTRAINT job_state_pkey PRIMARY KEY (job);


--
-- Name: run_record run_record_pkey; Type: CONSTRAINT; Schema: slotcron_v1_fixture; Owner: -
--

ALTER TABLE ONLY slotcron_v1_fixture.run_record
    ADD CONSTRAINT run_record_pkey PRIMARY KEY (id);


--
-- Name: claim_expiry; Type: INDEX; Schema: slotcron_v1_fixture; Owner: -
--

CREATE INDEX claim_expiry ON slotcron_v1_fixture.claim USING btree (expires_at) WHERE (expires_at IS NOT NULL);


--
-- Name: run_record_by_job; Type: INDEX; Schema: slotcron_v1_fixture; Owner: -
--

CREATE INDEX run_record_by_job ON slotcron_v1_fixture.run_record USING btree (job, trigger_at DESC, started_at DESC);


--
-- Name: run_record_by_trigger; Type: INDEX; Schema: slotcron_v1_fixture; Owner: -
--

CREATE INDEX run_record_by_trigger ON slotcron_v1_fixture.run_record USING btree (trigger_at DESC, started_at DESC);


--
-- PostgreSQL database dump complete
--


