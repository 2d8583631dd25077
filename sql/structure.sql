--
-- sql/structure.sql: the current schema of mt5credit, as one document.
--
-- Generated from a database that sql/migrate built from sql/NNN_*.sql
-- (pg_dump --schema-only --schema=mt5credit); t/89_structure.t fails when
-- the two disagree.  Read it for the current definition of any table,
-- function or grant; change the schema only with a new migration, then
-- regenerate it: MT5CREDIT_WRITE_STRUCTURE=1 t/run-tests t/89_structure.t
--
--
-- PostgreSQL database dump
--



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
-- Name: mt5credit; Type: SCHEMA; Schema: -; Owner: mt5credit_owner
--

CREATE SCHEMA mt5credit;


ALTER SCHEMA mt5credit OWNER TO mt5credit_owner;

--
-- Name: ingest_step; Type: TYPE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TYPE mt5credit.ingest_step AS (
	disposition text,
	credit_id bigint,
	detail text
);


ALTER TYPE mt5credit.ingest_step OWNER TO mt5credit_owner;

--
-- Name: journal_chain; Type: DOMAIN; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE DOMAIN mt5credit.journal_chain AS text COLLATE pg_catalog."C"
	CONSTRAINT journal_chain_check CHECK ((VALUE ~ '^[a-z_]+:[0-9]+$'::text));


ALTER DOMAIN mt5credit.journal_chain OWNER TO mt5credit_owner;

--
-- Name: journal_seq; Type: DOMAIN; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE DOMAIN mt5credit.journal_seq AS integer
	CONSTRAINT journal_seq_check CHECK ((VALUE > 0));


ALTER DOMAIN mt5credit.journal_seq OWNER TO mt5credit_owner;

--
-- Name: payment_fact; Type: TYPE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TYPE mt5credit.payment_fact AS (
	action text,
	payment_key text,
	original_key text,
	deposit_ref text,
	amount_minor bigint,
	currency text,
	note text
);


ALTER TYPE mt5credit.payment_fact OWNER TO mt5credit_owner;

--
-- Name: payout_item; Type: TYPE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TYPE mt5credit.payout_item AS (
	id bigint,
	attempts integer,
	status text,
	reference text,
	idempotency_key text,
	provider text,
	amount_minor bigint,
	currency text,
	destination text,
	provider_payout_id text,
	debit_reference text,
	first_sent_epoch bigint,
	deployment_tag text
);


ALTER TYPE mt5credit.payout_item OWNER TO mt5credit_owner;

--
-- Name: refund_item; Type: TYPE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TYPE mt5credit.refund_item AS (
	id bigint,
	attempts integer,
	status text,
	reference text,
	idempotency_key text,
	provider text,
	payment_key text,
	amount_minor bigint,
	currency text,
	provider_refund_id text,
	withdrawal_reference text,
	debit_reference text,
	first_sent_epoch bigint,
	deployment_tag text,
	card_hint text
);


ALTER TYPE mt5credit.refund_item OWNER TO mt5credit_owner;

--
-- Name: request_id; Type: DOMAIN; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE DOMAIN mt5credit.request_id AS text
	CONSTRAINT request_id_check CHECK ((VALUE ~ '^[0-9a-f]{32}$'::text));


ALTER DOMAIN mt5credit.request_id OWNER TO mt5credit_owner;

--
-- Name: risk_fact; Type: TYPE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TYPE mt5credit.risk_fact AS (
	payer_name text,
	instrument text,
	provider_signal text
);


ALTER TYPE mt5credit.risk_fact OWNER TO mt5credit_owner;

--
-- Name: sha256_digest; Type: DOMAIN; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE DOMAIN mt5credit.sha256_digest AS bytea
	CONSTRAINT sha256_digest_check CHECK ((length(VALUE) = 32));


ALTER DOMAIN mt5credit.sha256_digest OWNER TO mt5credit_owner;

--
-- Name: work_item; Type: TYPE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TYPE mt5credit.work_item AS (
	id bigint,
	attempts integer,
	kind text,
	direction text,
	reference text,
	mt5_server text,
	mt5_login bigint,
	amount_minor bigint,
	currency text,
	currency_digits smallint,
	client_id text,
	owner_ok boolean,
	created_at timestamp with time zone,
	claimed_at timestamp with time zone,
	lease_expires_at timestamp with time zone,
	lease_ms_left bigint,
	settle_ticket bigint,
	look_from timestamp with time zone
);


ALTER TYPE mt5credit.work_item OWNER TO mt5credit_owner;

--
-- Name: backfill_event(text, text, bytea); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.backfill_event(p_provider text, p_event_id text, p_event bytea) RETURNS TABLE(outcome text, credit_id bigint, event_row_id bigint, detail text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $_$
DECLARE
    e        jsonb;
    v        webhook_event;
    v_why    jsonb;
    v_sha    text := encode(sha256(p_event), 'hex');
    v_closed text;
    d        deposit;
    v_case   bigint;
BEGIN
    IF p_event_id IS NULL OR p_event_id !~ '^evt_[A-Za-z0-9_]{1,250}$' THEN
        RAISE EXCEPTION 'not a provider event id: %', p_event_id
            USING ERRCODE = 'MC110';
    END IF;

    BEGIN
        e := convert_from(p_event, 'UTF8')::jsonb;
    EXCEPTION WHEN others THEN
        e := NULL;
    END;

    -- 064: a provider no program of the caller's reads the events of
    -- (a Standard Webhooks PSP has no such list): never, whatever the bytes
    v_closed := program_door_closed(p_provider, 'events', NULL);
    IF v_closed IS NOT NULL THEN
        v_why := jsonb_build_object('why', v_closed);
    ELSE
        IF jsonb_typeof(e) IS DISTINCT FROM 'object'
           OR e->>'object' IS DISTINCT FROM 'event'
           OR e->>'id' IS DISTINCT FROM p_event_id
           OR jsonb_typeof(e->'data'->'object') IS DISTINCT FROM 'object'
        THEN
            RAISE EXCEPTION 'the answer for % is not that event', p_event_id
                USING ERRCODE = 'MC110';
        END IF;

        SELECT * INTO v FROM webhook_event
        WHERE provider = p_provider
          AND provider_event_id IN (p_event_id, 'backfill:' || p_event_id)
        ORDER BY id
        LIMIT 1;
        IF FOUND THEN
            RETURN QUERY SELECT 'stored'::text, v.credit_id, v.id,
                                ('already stored as ' || v.provider_event_id
                                 || ', ' || v.disposition)::text;
            RETURN;
        END IF;

        -- 064: what it would credit, its deposit vouches for
        v_why := program_answer_unvouched(p_provider, e->>'type', e);
    END IF;

    IF v_why IS NOT NULL THEN
        SELECT * INTO d FROM deposit
        WHERE id = (v_why->>'deposit')::bigint;

        v_case := open_case('query_answer_mismatch', 'critical',
                            'query_answer_mismatch:backfill:' || p_provider
                                || ':' || p_event_id || ':' || v_sha,
                            jsonb_build_object(
                                'why', v_why->'why',
                                'provider', p_provider,
                                'event', p_event_id,
                                'type', e->>'type',
                                'got', v_why->'got',
                                'expected', v_why->'expected',
                                'answer_sha256', v_sha,
                                'caller', mt5credit.person()),
                            NULL, d.id, NULL, d.amount_minor, d.currency);

        RETURN QUERY SELECT 'refused'::text, NULL::bigint, NULL::bigint,
                            ((v_why->>'why') || ': case ' || v_case)::text;
        RETURN;
    END IF;

    RETURN QUERY SELECT * FROM ingest(p_provider, 'backfill:' || p_event_id,
                                      p_event, 'api', NULL);
END
$_$;


ALTER FUNCTION mt5credit.backfill_event(p_provider text, p_event_id text, p_event bytea) OWNER TO mt5credit_owner;

--
-- Name: backfill_request_add(text, timestamp with time zone, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.backfill_request_add(p_provider text, p_since timestamp with time zone, p_reason text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_id  bigint;
BEGIN
    IF p_since IS NULL OR p_since > clock_timestamp()
       OR p_since < clock_timestamp() - interval '30 days'
    THEN
        RAISE EXCEPTION 'a backfill reads from a time in the last 30 days, '
                        'not %', coalesce(p_since::text, 'none')
            USING ERRCODE = 'MC096';
    END IF;

    INSERT INTO backfill_request (provider, since, reason)
    VALUES (p_provider, p_since, p_reason)
    RETURNING id INTO v_id;

    RETURN v_id;
END
$$;


ALTER FUNCTION mt5credit.backfill_request_add(p_provider text, p_since timestamp with time zone, p_reason text) OWNER TO mt5credit_owner;

--
-- Name: backfill_request_guard(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.backfill_request_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF (NEW.provider, NEW.since, NEW.reason, NEW.requested_by,
        NEW.requested_at, NEW.every_event)
       IS DISTINCT FROM
       (OLD.provider, OLD.since, OLD.reason, OLD.requested_by,
        OLD.requested_at, OLD.every_event)
       OR OLD.finished_at IS NOT NULL
    THEN
        RAISE EXCEPTION 'backfill request %: what was asked, and a finished '
                        'request, never change', OLD.id
            USING ERRCODE = 'MC096';
    END IF;
    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.backfill_request_guard() OWNER TO mt5credit_owner;

--
-- Name: backfill_requests_done(bigint[], boolean, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.backfill_requests_done(p_ids bigint[], p_complete boolean, p_outcome text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_n  integer;
BEGIN
    IF p_complete THEN
        UPDATE backfill_request
        SET finished_at = clock_timestamp(), outcome = left(p_outcome, 2000)
        WHERE id = ANY (p_ids) AND finished_at IS NULL
          AND taken_by = session_user;
    ELSE
        UPDATE backfill_request
        SET taken_by = NULL, taken_at = NULL
        WHERE id = ANY (p_ids) AND finished_at IS NULL
          AND taken_by = session_user;
    END IF;

    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END
$$;


ALTER FUNCTION mt5credit.backfill_requests_done(p_ids bigint[], p_complete boolean, p_outcome text) OWNER TO mt5credit_owner;

--
-- Name: backfill_requests_list(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.backfill_requests_list() RETURNS TABLE(id bigint, provider text, since timestamp with time zone, reason text, requested_by text, requested_at timestamp with time zone, taken_at timestamp with time zone, finished_at timestamp with time zone, outcome text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT b.id, b.provider, b.since, b.reason, b.requested_by,
           b.requested_at, b.taken_at, b.finished_at, b.outcome
    FROM backfill_request b
    ORDER BY b.id DESC
    LIMIT 100
$$;


ALTER FUNCTION mt5credit.backfill_requests_list() OWNER TO mt5credit_owner;

--
-- Name: backfill_requests_take(text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.backfill_requests_take(p_provider text) RETURNS TABLE(id bigint, since timestamp with time zone, every_event boolean)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    UPDATE backfill_request b
    SET taken_by = session_user, taken_at = clock_timestamp()
    WHERE b.provider = p_provider AND b.finished_at IS NULL
      AND (b.taken_at IS NULL
           OR b.taken_at < clock_timestamp() - interval '1 hour')
    RETURNING b.id, b.since, b.every_event
$$;


ALTER FUNCTION mt5credit.backfill_requests_take(p_provider text) OWNER TO mt5credit_owner;

--
-- Name: base32(bytea); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.base32(p bytea) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT
    AS $$
DECLARE
    a     constant text := 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
    bits  bigint := 0;
    n     integer := 0;
    s     text := '';
BEGIN
    FOR i IN 0 .. length(p) - 1 LOOP
        bits := (bits << 8) | get_byte(p, i);
        n := n + 8;
        WHILE n >= 5 LOOP
            s := s || substr(a, ((bits >> (n - 5)) & 31)::integer + 1, 1);
            n := n - 5;
        END LOOP;
        bits := bits & ((1::bigint << n) - 1);
    END LOOP;
    IF n > 0 THEN
        s := s || substr(a, ((bits << (5 - n)) & 31)::integer + 1, 1);
    END IF;
    RETURN s;
END
$$;


ALTER FUNCTION mt5credit.base32(p bytea) OWNER TO mt5credit_owner;

--
-- Name: batch_entry(text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.batch_entry(p_key text) RETURNS text
    LANGUAGE plpgsql STABLE
    AS $$
DECLARE
    v_map  text;
    v_at   integer;
BEGIN
    IF current_setting('mt5credit.actor', true)
       IS DISTINCT FROM 'ingest:batch'
    THEN
        RETURN NULL;
    END IF;

    v_map := current_setting('mt5credit.actors', true);
    v_at := strpos(v_map, chr(30) || p_key || chr(31));
    IF v_at = 0 THEN
        RETURN NULL;
    END IF;

    RETURN split_part(substr(v_map, v_at + length(p_key) + 2), chr(30), 1);
END
$$;


ALTER FUNCTION mt5credit.batch_entry(p_key text) OWNER TO mt5credit_owner;

--
-- Name: FUNCTION batch_entry(p_key text); Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON FUNCTION mt5credit.batch_entry(p_key text) IS 'While ingest_batch() writes its rows: the history actor of credit c<id>, or actor, credit and payment of deposit d<id>; else NULL.';


--
-- Name: case_assign(bigint, text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.case_assign(p_case bigint, p_to text, p_note text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $_$
DECLARE
    c  "case" := desk_case(p_case);
BEGIN
    PERFORM desk_require_open(c);
    PERFORM desk_require_no_open_proposal(p_case);
    IF p_to IS NULL OR p_to !~ '^[A-Za-z0-9_.@-]{1,200}$' THEN
        RAISE EXCEPTION 'assign to whom? "%" is not a user name',
                        coalesce(p_to, '') USING ERRCODE = 'MC047';
    END IF;
    UPDATE "case" SET status = 'assigned', assigned_to = p_to
    WHERE id = p_case AND status = c.status;
    PERFORM desk_record(p_case, 'assign',
        jsonb_build_object('status', c.status, 'assigned_to', c.assigned_to),
        jsonb_build_object('status', 'assigned', 'assigned_to', p_to),
        p_note, NULL);
END
$_$;


ALTER FUNCTION mt5credit.case_assign(p_case bigint, p_to text, p_note text) OWNER TO mt5credit_owner;

--
-- Name: case_decide(bigint, text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.case_decide(p_proposal bigint, p_decision text, p_note text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    p  money_proposal;
BEGIN
    SELECT * INTO p FROM money_proposal WHERE id = p_proposal FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no proposal %', p_proposal USING ERRCODE = 'MC044';
    END IF;
    IF p.withdrawal_id IS NULL THEN
        RETURN credit_case_decide(p_proposal, p_decision, p_note);
    END IF;
    RETURN withdrawal_case_decide(p, p_decision, p_note);
END
$$;


ALTER FUNCTION mt5credit.case_decide(p_proposal bigint, p_decision text, p_note text) OWNER TO mt5credit_owner;

--
-- Name: case_guard(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.case_guard() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    IF (NEW.kind, NEW.severity, NEW.dedupe_key, NEW.opened_at, NEW.opened_by,
        NEW.credit_id, NEW.deposit_id, NEW.webhook_event_id)
       IS DISTINCT FROM
       (OLD.kind, OLD.severity, OLD.dedupe_key, OLD.opened_at, OLD.opened_by,
        OLD.credit_id, OLD.deposit_id, OLD.webhook_event_id)
    THEN
        RAISE EXCEPTION 'case %: what it is about cannot change', OLD.id
            USING ERRCODE = 'MC042';
    END IF;
    IF NEW.status IS DISTINCT FROM OLD.status
       AND NOT EXISTS (SELECT 1 FROM case_transition
                       WHERE from_status = OLD.status
                         AND to_status = NEW.status)
    THEN
        RAISE EXCEPTION 'case %: % -> % is not a legal change', OLD.id,
                        OLD.status, NEW.status
            USING ERRCODE = 'MC043';
    END IF;
    NEW.updated_at := now();
    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.case_guard() OWNER TO mt5credit_owner;

--
-- Name: case_list(text, text, interval, integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.case_list(p_kind text, p_status text, p_min_age interval, p_limit integer) RETURNS TABLE(id bigint, priority text, severity text, kind text, status text, assigned_to text, amount_minor bigint, currency text, opened_at timestamp with time zone, age interval, credit_id bigint, summary text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT c.id,
           case_priority(c.amount_minor, c.currency, c.opened_at, now()),
           c.severity, c.kind, c.status, c.assigned_to, c.amount_minor,
           c.currency, c.opened_at, date_trunc('second', now() - c.opened_at),
           c.credit_id,
           coalesce(c.details->'credit'->>'reference',
                    c.details->'settlement'->>'row_id',
                    c.details->'deals'->0->>'comment', '')
    FROM "case" c
    WHERE (p_kind IS NULL OR c.kind = p_kind)
      AND (CASE WHEN p_status IS NULL THEN c.status <> 'resolved'
                WHEN p_status = 'all' THEN true
                ELSE c.status = p_status END)
      AND (p_min_age IS NULL OR now() - c.opened_at >= p_min_age)
    ORDER BY 2, c.opened_at, c.id
    LIMIT coalesce(p_limit, 1000)
$$;


ALTER FUNCTION mt5credit.case_list(p_kind text, p_status text, p_min_age interval, p_limit integer) OWNER TO mt5credit_owner;

--
-- Name: case_note(bigint, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.case_note(p_case bigint, p_note text, p_evidence jsonb) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    c  "case" := desk_case(p_case);
BEGIN
    IF coalesce(p_note, '') = '' THEN
        RAISE EXCEPTION 'a note needs text' USING ERRCODE = 'MC047';
    END IF;
    PERFORM desk_record(p_case, 'note', NULL, NULL, p_note, p_evidence);
END
$$;


ALTER FUNCTION mt5credit.case_note(p_case bigint, p_note text, p_evidence jsonb) OWNER TO mt5credit_owner;

--
-- Name: case_priority(bigint, text, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.case_priority(p_amount_minor bigint, p_currency text, p_opened_at timestamp with time zone, p_now timestamp with time zone) RETURNS text
    LANGUAGE sql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT CASE
        WHEN major >= 100000 OR age >= interval '120 hours' THEN 'P1'
        WHEN major >= 10000 OR age >= interval '72 hours' THEN 'P2'
        WHEN major >= 1000 OR age >= interval '24 hours' THEN 'P3'
        ELSE 'P4' END
    FROM (SELECT coalesce(p_amount_minor::numeric
                          / 10 ^ (SELECT minor_digits FROM currency
                                  WHERE code = p_currency), 0) AS major,
                 p_now - p_opened_at AS age) x
$$;


ALTER FUNCTION mt5credit.case_priority(p_amount_minor bigint, p_currency text, p_opened_at timestamp with time zone, p_now timestamp with time zone) OWNER TO mt5credit_owner;

--
-- Name: case_propose(bigint, text, bigint, text, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.case_propose(p_case bigint, p_action text, p_credit_id bigint, p_amount text, p_note text, p_evidence jsonb) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    c  "case" := desk_case(p_case);
BEGIN
    IF c.kind <> 'withdrawal_hold' THEN
        RETURN credit_case_propose(p_case, p_action, p_credit_id, p_amount,
                                   p_note, p_evidence);
    END IF;
    PERFORM desk_require_open(c);
    IF p_credit_id IS NOT NULL OR p_amount IS NOT NULL THEN
        RAISE EXCEPTION 'case %: a withdrawal''s hold takes no credit and '
                        'no amount', p_case USING ERRCODE = 'MC048';
    END IF;
    RETURN withdrawal_case_propose(c, p_action, p_note, p_evidence);
END
$$;


ALTER FUNCTION mt5credit.case_propose(p_case bigint, p_action text, p_credit_id bigint, p_amount text, p_note text, p_evidence jsonb) OWNER TO mt5credit_owner;

--
-- Name: case_propose_settle_done(bigint, bigint, bigint, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.case_propose_settle_done(p_case bigint, p_credit_id bigint, p_ticket bigint, p_note text, p_evidence jsonb) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    c       "case" := desk_case(p_case);
    v_cr    mt5_credit;
    v_held  bigint;
    v_id    bigint;
BEGIN
    PERFORM desk_require_open(c);
    SELECT * INTO v_cr FROM mt5_credit
    WHERE id = coalesce(p_credit_id, c.credit_id) FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'case %: which credit? none given and none on the '
                        'case', p_case USING ERRCODE = 'MC048';
    END IF;
    IF v_cr.status <> 'unknown' THEN
        RAISE EXCEPTION 'credit % is %: only an unknown credit is settled',
                        v_cr.id, v_cr.status USING ERRCODE = 'MC048';
    END IF;
    IF p_ticket IS NULL OR p_ticket <= 0 THEN
        RAISE EXCEPTION 'settling credit % as done names its MT5 deal '
                        '(--ticket)', v_cr.id USING ERRCODE = 'MC048';
    END IF;
    IF jsonb_array_length(coalesce(p_evidence, '[]')) = 0 THEN
        RAISE EXCEPTION 'settling credit % as done needs evidence: where '
                        'the deal % was seen (--evidence)', v_cr.id, p_ticket
            USING ERRCODE = 'MC048';
    END IF;
    SELECT id INTO v_held FROM mt5_credit
    WHERE mt5_server = v_cr.mt5_server AND mt5_deal_ticket = p_ticket;
    IF FOUND THEN
        RAISE EXCEPTION 'deal % on % is credit %''s already', p_ticket,
                        v_cr.mt5_server, v_held USING ERRCODE = 'MC048';
    END IF;
    IF (settle_request(v_cr.id)).id IS NOT NULL THEN
        RAISE EXCEPTION 'credit % already waits for the worker to verify '
                        'deal %', v_cr.id, (settle_request(v_cr.id)).deal_ticket
            USING ERRCODE = 'MC048';
    END IF;

    -- 065: through the console, the person's code for this proposal
    PERFORM step_up_require('propose_settle_done', p_case::text,
                            p_credit_id::text, p_ticket::text);

    INSERT INTO money_proposal (case_id, action, credit_id, deal_ticket,
                                note, evidence, proposed_by)
    VALUES (p_case, 'settle_done', v_cr.id, p_ticket, p_note,
            p_evidence, mt5credit.person())
    RETURNING id INTO v_id;

    UPDATE "case" SET status = 'pending_resolution' WHERE id = p_case;
    PERFORM desk_record(p_case, 'propose',
        jsonb_build_object('status', c.status),
        jsonb_build_object('status', 'pending_resolution', 'proposal', v_id,
                           'action', 'settle_done', 'credit', v_cr.id,
                           'deal', p_ticket),
        p_note, p_evidence);
    RETURN v_id;
END
$$;


ALTER FUNCTION mt5credit.case_propose_settle_done(p_case bigint, p_credit_id bigint, p_ticket bigint, p_note text, p_evidence jsonb) OWNER TO mt5credit_owner;

--
-- Name: case_resolve(bigint, text, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.case_resolve(p_case bigint, p_resolution text, p_note text, p_evidence jsonb) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    c  "case" := desk_case(p_case);
BEGIN
    PERFORM desk_require_open(c);
    PERFORM desk_require_no_open_proposal(p_case);
    IF coalesce(p_note, '') = '' THEN
        RAISE EXCEPTION 'a resolution needs a note saying why'
            USING ERRCODE = 'MC047';
    END IF;
    UPDATE "case"
    SET status = 'resolved', resolution = p_resolution,
        resolved_by = mt5credit.person(), resolved_at = now()
    WHERE id = p_case AND status = c.status;
    PERFORM desk_record(p_case, 'resolve',
        jsonb_build_object('status', c.status),
        jsonb_build_object('status', 'resolved', 'resolution', p_resolution),
        p_note, p_evidence);
END
$$;


ALTER FUNCTION mt5credit.case_resolve(p_case bigint, p_resolution text, p_note text, p_evidence jsonb) OWNER TO mt5credit_owner;

--
-- Name: case_show(bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.case_show(p_case bigint) RETURNS jsonb
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    c     "case";
    v_cr  bigint;
BEGIN
    SELECT * INTO c FROM "case" WHERE id = p_case;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no case %', p_case USING ERRCODE = 'MC044';
    END IF;
    v_cr := c.credit_id;

    RETURN jsonb_build_object(
        'case', to_jsonb(c) || jsonb_build_object('priority',
                    case_priority(c.amount_minor, c.currency, c.opened_at,
                                  now())),
        'actions', coalesce((SELECT jsonb_agg(to_jsonb(a) ORDER BY a.id)
                             FROM case_action a WHERE a.case_id = c.id),
                            '[]'),
        'proposals', coalesce((SELECT jsonb_agg(to_jsonb(p) ORDER BY p.id)
                               FROM money_proposal p
                               WHERE p.case_id = c.id), '[]'),
        'credit', (SELECT to_jsonb(x) FROM mt5_credit x WHERE x.id = v_cr),
        'credit_history',
            coalesce((SELECT jsonb_agg(to_jsonb(h) ORDER BY h.id)
                      FROM credit_history h WHERE h.credit_id = v_cr), '[]'),
        'related_credits',
            coalesce((SELECT jsonb_agg(jsonb_build_object(
                                 'id', x.id, 'reference', x.reference,
                                 'kind', x.kind, 'status', x.status,
                                 'amount_minor', x.amount_minor,
                                 'currency', x.currency) ORDER BY x.id)
                      FROM mt5_credit x
                      WHERE x.original_credit_id = v_cr), '[]'),
        'deposit', (SELECT to_jsonb(d) FROM deposit d
                    WHERE d.id = coalesce(c.deposit_id,
                        (SELECT deposit_id FROM mt5_credit WHERE id = v_cr))),
        'events',
            coalesce((SELECT jsonb_agg(jsonb_build_object(
                                 'id', e.id, 'provider', e.provider,
                                 'event_id', e.provider_event_id,
                                 'type', e.event_type,
                                 'received_at', e.received_at,
                                 'disposition', e.disposition,
                                 'detail', e.detail,
                                 'body', convert_from(e.raw_body, 'UTF8'))
                             ORDER BY e.id)
                      FROM webhook_event e
                      WHERE e.credit_id = v_cr OR e.id = c.webhook_event_id),
                     '[]'),
        'recon_items',
            coalesce((SELECT jsonb_agg(to_jsonb(i) ORDER BY i.id)
                      FROM recon_item i WHERE i.case_id = c.id), '[]'));
END
$$;


ALTER FUNCTION mt5credit.case_show(p_case bigint) OWNER TO mt5credit_owner;

--
-- Name: claim_credit(text, integer, text[]); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.claim_credit(p_worker text, p_lease_seconds integer, p_servers text[]) RETURNS SETOF mt5credit.work_item
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_id       bigint;
    v_servers  text[];
BEGIN
    IF p_lease_seconds < 1 THEN
        RAISE EXCEPTION 'lease must be at least a second' USING ERRCODE = 'MC020';
    END IF;

    -- a paused server is left out of the pick altogether (046), so a
    -- backlog behind its pause is not scanned on every claim
    SELECT coalesce(array_agg(s), '{}') INTO v_servers
    FROM unnest(p_servers) s
    WHERE NOT paused('server', s);
    IF cardinality(v_servers) = 0 THEN
        RETURN;
    END IF;

    PERFORM set_actor(p_worker, '{"step": "claim"}');

    WITH next AS (
        SELECT c.id
        FROM mt5_credit c
        WHERE c.status = 'pending'
          AND c.mt5_server = ANY (v_servers)
          -- a paused provider's or kind's credits wait (046)
          AND NOT EXISTS (SELECT 1 FROM pause p
                          WHERE p.resumed_at IS NULL
                            AND ((p.scope = 'provider'
                                  AND p.target = c.provider)
                                 OR (p.scope = 'kind'
                                     AND p.target = c.kind)))
          AND (c.original_credit_id IS NULL
               OR EXISTS (SELECT 1 FROM mt5_credit o
                          WHERE o.id = c.original_credit_id
                            AND o.status = 'done'))
          -- a reinstatement gives back what its chargeback debits took:
          -- only once each of them is done (026)
          AND (c.kind <> 'chargeback' OR c.direction <> 'credit'
               OR NOT EXISTS (SELECT 1 FROM mt5_credit d
                              WHERE d.original_credit_id = c.original_credit_id
                                AND d.kind = 'chargeback'
                                AND d.direction = 'debit'
                                AND d.status <> 'done'))
        ORDER BY c.id
        LIMIT 1
        FOR UPDATE SKIP LOCKED
    )
    UPDATE mt5_credit c
    SET status = 'claimed',
        attempts = c.attempts + 1,
        claimed_at = clock_timestamp(),
        claimed_by = left(p_worker, 200),
        lease_expires_at = clock_timestamp()
                           + make_interval(secs => p_lease_seconds),
        next_check_at = NULL
    FROM next
    WHERE c.id = next.id
      AND c.status = 'pending'
    RETURNING c.id INTO v_id;

    IF v_id IS NOT NULL THEN
        RETURN NEXT work_item_of(v_id);
    END IF;
END
$$;


ALTER FUNCTION mt5credit.claim_credit(p_worker text, p_lease_seconds integer, p_servers text[]) OWNER TO mt5credit_owner;

--
-- Name: client_name_set(text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.client_name_set(p_client text, p_name text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    IF p_name IS NULL OR length(p_name) NOT BETWEEN 1 AND 200
       OR cardinality(name_words(p_name)) = 0
    THEN
        RAISE EXCEPTION 'client %: a name needs letters, at most 200 '
                        'characters', coalesce(p_client, '')
            USING ERRCODE = 'MC048';
    END IF;
    INSERT INTO client_name (client_id, name) VALUES (p_client, p_name)
    ON CONFLICT (client_id)
        DO UPDATE SET name = excluded.name, set_at = now();
END
$$;


ALTER FUNCTION mt5credit.client_name_set(p_client text, p_name text) OWNER TO mt5credit_owner;

--
-- Name: console_act(jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.console_act(p jsonb) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_action    text := p->>'action';
    v_evidence  jsonb := coalesce(p->'evidence', '[]');
    v_code      text := p->>'code';
    v_id        bigint;
    v_digest    text;
    v_outcome   text;
    v_refused   jsonb;
BEGIN
    IF jsonb_typeof(p) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'an action is a JSON object' USING ERRCODE = 'MC094';
    END IF;

    IF jsonb_typeof(v_evidence) <> 'array' THEN
        RAISE EXCEPTION 'evidence is a list' USING ERRCODE = 'MC094';
    END IF;

    CASE v_action
    WHEN 'assign' THEN
        PERFORM case_assign((p->>'case')::bigint, p->>'to', p->>'note');

    WHEN 'note' THEN
        PERFORM case_note((p->>'case')::bigint, p->>'note', v_evidence);

    WHEN 'propose' THEN
        v_refused := step_up_verify(v_code, v_action,
                                    (p->>'case')::bigint::text,
                                    p->>'proposal_action',
                                    (p->>'credit')::bigint::text,
                                    p->>'amount');
        IF v_refused IS NULL THEN
            v_id := case_propose((p->>'case')::bigint, p->>'proposal_action',
                                 (p->>'credit')::bigint, p->>'amount',
                                 p->>'note', v_evidence);
        END IF;

    WHEN 'propose_settle_done' THEN
        v_refused := step_up_verify(v_code, v_action,
                                    (p->>'case')::bigint::text,
                                    (p->>'credit')::bigint::text,
                                    (p->>'ticket')::bigint::text);
        IF v_refused IS NULL THEN
            v_id := case_propose_settle_done((p->>'case')::bigint,
                                             (p->>'credit')::bigint,
                                             (p->>'ticket')::bigint,
                                             p->>'note', v_evidence);
        END IF;

    WHEN 'approve' THEN
        v_refused := step_up_verify(v_code, v_action,
                                    (p->>'proposal')::bigint::text);
        IF v_refused IS NULL THEN
            v_id := case_decide((p->>'proposal')::bigint, v_action,
                                p->>'note');
        END IF;

    WHEN 'reject', 'withdraw' THEN
        v_id := case_decide((p->>'proposal')::bigint, v_action,
                            p->>'note');

    WHEN 'resolve' THEN
        PERFORM case_resolve((p->>'case')::bigint, p->>'resolution',
                             p->>'note', v_evidence);

    -- a withdrawal: one person prepares (the digest of what they saw),
    -- another approves with that digest (042)
    WHEN 'withdrawal_prepare' THEN
        v_refused := step_up_verify(v_code, v_action, p->>'withdrawal');
        IF v_refused IS NULL THEN
            v_digest := withdrawal_prepare(p->>'withdrawal', p->>'note');
        END IF;

    WHEN 'withdrawal_approve' THEN
        v_refused := step_up_verify(v_code, v_action, p->>'withdrawal',
                                    p->>'digest');
        IF v_refused IS NULL THEN
            PERFORM withdrawal_approve(p->>'withdrawal', p->>'digest',
                                       p->>'note');
        END IF;

    WHEN 'withdrawal_reject' THEN
        PERFORM withdrawal_reject(p->>'withdrawal', p->>'note');

    -- a stored event through ingest's rules again (039), recorded with
    -- who and why; its outcome is the answer
    WHEN 'event_replay' THEN
        SELECT r.replay_id, r.outcome INTO v_id, v_outcome
        FROM event_replay((p->>'event')::bigint, p->>'reason') r;

    -- a backfill from the provider's list, further back than its timer
    -- looks: asked for here, done by the next `mt5credit backfill` (059)
    WHEN 'backfill' THEN
        v_id := backfill_request_add(p->>'provider',
                                     (p->>'since')::timestamptz,
                                     p->>'reason');

    -- the kill switch (046)
    WHEN 'pause' THEN
        v_id := pause_set(p->>'scope', p->>'target', p->>'reason');

    WHEN 'resume' THEN
        v_id := pause_resume(p->>'scope', p->>'target', p->>'note');

    -- outbound events (095): one again, every one since a time; an
    -- endpoint the sender disabled, on again.  The count is the answer.
    WHEN 'outbound_replay' THEN
        v_id := outbound_replay(p->>'webhook_id', p->>'endpoint',
                                p->>'reason');

    WHEN 'outbound_replay_since' THEN
        v_id := outbound_replay_since((p->>'since')::timestamptz,
                                      p->>'endpoint', p->>'reason');

    WHEN 'outbound_enable' THEN
        v_outcome := CASE WHEN outbound_endpoint_enable(p->>'endpoint',
                                                        p->>'reason')
                          THEN 'enabled' ELSE 'not_disabled' END;

    ELSE
        RAISE EXCEPTION 'no action "%"', coalesce(v_action, '')
            USING ERRCODE = 'MC094';
    END CASE;

    IF v_refused IS NOT NULL THEN
        RETURN v_refused;
    END IF;

    RETURN jsonb_build_object('action', v_action,
                              'by', console_whoami()->>'person',
                              'id', v_id, 'digest', v_digest,
                              'outcome', v_outcome);
END
$$;


ALTER FUNCTION mt5credit.console_act(p jsonb) OWNER TO mt5credit_owner;

--
-- Name: console_act_admit(text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.console_act_admit(p_person text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_minute  timestamptz := date_trunc('minute', clock_timestamp());
    v_n       integer;
BEGIN
    INSERT INTO console_act_rate AS r (person, minute, actions)
    VALUES (p_person, v_minute, 1)
    ON CONFLICT (person) DO UPDATE
    SET actions = CASE WHEN r.minute = v_minute THEN r.actions + 1 ELSE 1 END,
        minute = v_minute
    WHERE r.minute <> v_minute OR r.actions < 60
    RETURNING actions INTO v_n;

    IF v_n IS NULL THEN
        RAISE EXCEPTION '% sent 60 actions this minute: wait', p_person
            USING ERRCODE = 'MC132';
    END IF;
END
$$;


ALTER FUNCTION mt5credit.console_act_admit(p_person text) OWNER TO mt5credit_owner;

--
-- Name: console_call(text, text, text, text, text, text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.console_call(p_identity text, p_endpoint text, p1 text, p2 text, p3 text, p4 text, p5 text) RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_person  text := console_person_of(p_identity);
    v_me      jsonb;
    v_out     text;
BEGIN
    IF p_endpoint = 'act' THEN
        PERFORM console_act_admit(v_person);
    END IF;

    -- PostgreSQL checks that the console's login may become v_person
    PERFORM set_config('role', v_person, true);

    -- as the person, before anything else: a person who may look or act
    v_me := console_whoami();

    CASE p_endpoint

    -- who, what they may, and the token their actions carry (the edge's)
    WHEN 'whoami' THEN
        v_out := (v_me || jsonb_build_object('csrf', p1))::text;

    -- the queue: kind, status, age (minutes), severity, owner
    WHEN 'cases' THEN
        SELECT coalesce(jsonb_agg(to_jsonb(c) ORDER BY c.priority,
                                  c.opened_at), '[]')::text
        INTO v_out
        FROM case_list(p1, p2, p3::integer * interval '1 minute', 500) c
        WHERE c.severity = coalesce(p4, c.severity)
          AND c.assigned_to IS NOT DISTINCT FROM coalesce(p5, c.assigned_to);

    WHEN 'case' THEN
        v_out := case_show(p1::bigint)::text;

    -- the stored events, as mt5credit events list searches them:
    -- provider, type, disposition, deposit, request id
    WHEN 'events' THEN
        SELECT coalesce(jsonb_agg(to_jsonb(e)), '[]')::text INTO v_out
        FROM events_list(p1, p2, p3, NULL, p4, NULL, NULL, p5, 500) e;

    WHEN 'event' THEN
        v_out := event_show(p1::bigint)::text;

    WHEN 'withdrawals' THEN
        SELECT coalesce(jsonb_agg(to_jsonb(q)), '[]')::text INTO v_out
        FROM withdrawal_queue(p1, 500) q;

    WHEN 'withdrawal' THEN
        v_out := withdrawal_show(p1)::text;

    -- references, clients, logins, payment ids
    WHEN 'search' THEN
        v_out := console_search(p1)::text;

    -- reconciliation: the runs, newest day first; one run's findings
    WHEN 'recon_runs' THEN
        SELECT coalesce(jsonb_agg(to_jsonb(x) ORDER BY x.business_day DESC,
                                  x.id DESC), '[]')::text
        INTO v_out
        FROM (SELECT r.id, r.provider, r.business_day, r.currency,
                     r.verdict, r.reason, r.started_by, r.started_at,
                     r.finished_at,
                     (SELECT jsonb_object_agg(c.name, c.n)
                      FROM recon_count c
                      WHERE c.run_id = r.id AND c.dimension = 'summary')
                         AS counts
              FROM recon_run r
              WHERE r.provider = coalesce(p1, r.provider)
              ORDER BY r.business_day DESC, r.id DESC LIMIT 500) x;

    WHEN 'recon_run' THEN
        SELECT (to_jsonb(r) || jsonb_build_object(
                'counts', (SELECT coalesce(jsonb_agg(to_jsonb(c)), '[]')
                           FROM recon_count c WHERE c.run_id = r.id),
                'items', (SELECT coalesce(jsonb_agg(to_jsonb(i)
                                                    ORDER BY i.id), '[]')
                          FROM recon_item i WHERE i.run_id = r.id),
                'in_transit_settlement',
                    (SELECT coalesce(jsonb_agg(to_jsonb(t)), '[]')
                     FROM recon_transit_settlement t WHERE t.run_id = r.id),
                'in_transit_credit',
                    (SELECT coalesce(jsonb_agg(to_jsonb(t)), '[]')
                     FROM recon_transit_credit t WHERE t.run_id = r.id)))::text
        INTO v_out
        FROM recon_run r WHERE r.id = p1::bigint;

    -- a run's HTML report, as the job wrote it (058), to download
    WHEN 'recon_report' THEN
        SELECT html INTO v_out FROM recon_report WHERE run_id = p1::bigint;

    WHEN 'status' THEN
        v_out := jsonb_build_object(
            'work', (SELECT coalesce(jsonb_agg(to_jsonb(w)), '[]')
                     FROM work_status() w),
            'pauses', (SELECT coalesce(jsonb_agg(to_jsonb(p)), '[]')
                       FROM pause_list(false) p),
            'reconciled', (SELECT coalesce(jsonb_agg(to_jsonb(f)), '[]')
                           FROM recon_freshness() f),
            'backfills', (SELECT coalesce(jsonb_agg(to_jsonb(b)), '[]')
                          FROM backfill_requests_list() b))::text;

    -- outbound events (095), newest first, a row per endpoint: by status
    -- and subject; one with its body as sent and every try
    WHEN 'outbound' THEN
        SELECT coalesce(jsonb_agg(to_jsonb(o)), '[]')::text INTO v_out
        FROM outbound_list(NULL, p1, p2, 500) o;

    WHEN 'outbound_message' THEN
        v_out := jsonb_build_object(
            'message', outbound_show(p1),
            'endpoints', (SELECT coalesce(jsonb_agg(to_jsonb(b)), '[]')
                          FROM outbound_backlog() b))::text;

    -- one JSON object, read by console_act() (055 and after)
    WHEN 'act' THEN
        v_out := console_act(p1::jsonb)::text;

    ELSE
        RAISE EXCEPTION 'no endpoint "%"', p_endpoint
            USING ERRCODE = 'MC131';
    END CASE;

    RETURN v_out;
END
$$;


ALTER FUNCTION mt5credit.console_call(p_identity text, p_endpoint text, p1 text, p2 text, p3 text, p4 text, p5 text) OWNER TO mt5credit_owner;

--
-- Name: console_person_of(text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.console_person_of(p_identity text) RETURNS text
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_role  text;
BEGIN
    SELECT r.rolname INTO v_role
    FROM console_identity i JOIN pg_roles r ON r.oid = i.person
    WHERE i.identity = p_identity;

    IF v_role IS NULL OR NOT person_is(v_role) THEN
        RAISE EXCEPTION 'no person is known by this identity'
            USING ERRCODE = 'MC130';
    END IF;

    RETURN v_role;
END
$$;


ALTER FUNCTION mt5credit.console_person_of(p_identity text) OWNER TO mt5credit_owner;

--
-- Name: console_search(text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.console_search(p_q text) RETURNS jsonb
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $_$
    WITH q AS (
        SELECT p_q AS s,
               CASE WHEN p_q ~ '^[0-9]{1,18}$' THEN p_q::bigint END AS n
    ),
    d AS (
        SELECT d.* FROM deposit d, q
        WHERE d.reference = q.s OR d.client_id = q.s OR d.mt5_login = q.n
           OR d.id IN (SELECT c.deposit_id FROM mt5_credit c
                       WHERE c.reference = q.s
                          OR c.provider_payment_id = q.s)
        ORDER BY d.id DESC LIMIT 50
    ),
    c AS (
        SELECT c.id, c.reference, c.kind, c.direction, c.status,
               c.amount_minor, c.currency, c.mt5_server, c.mt5_login,
               c.provider, c.provider_payment_id, c.mt5_deal_ticket,
               c.created_at
        FROM mt5_credit c, q
        WHERE c.reference = q.s OR c.provider_payment_id = q.s
           OR c.mt5_login = q.n
           OR c.deposit_id IN (SELECT id FROM d)
        ORDER BY c.id DESC LIMIT 50
    ),
    w AS (
        SELECT w.reference, w.status, w.client_id, w.mt5_login,
               w.amount_minor, w.currency, w.created_at
        FROM withdrawal w, q
        WHERE w.reference = q.s OR w.client_id = q.s OR w.mt5_login = q.n
        ORDER BY w.id DESC LIMIT 50
    )
    SELECT jsonb_build_object(
        'deposits', coalesce((SELECT jsonb_agg(jsonb_build_object(
                'reference', d.reference, 'client_id', d.client_id,
                'provider', d.provider, 'mt5_server', d.mt5_server,
                'mt5_login', d.mt5_login, 'amount_minor', d.amount_minor,
                'currency', d.currency, 'status', d.status,
                'created_at', d.created_at)) FROM d), '[]'),
        'credits', coalesce((SELECT jsonb_agg(to_jsonb(c)) FROM c), '[]'),
        'withdrawals', coalesce((SELECT jsonb_agg(to_jsonb(w)) FROM w),
                                '[]'))
$_$;


ALTER FUNCTION mt5credit.console_search(p_q text) OWNER TO mt5credit_owner;

--
-- Name: console_whoami(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.console_whoami() RETURNS jsonb
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT jsonb_build_object(
        'person', p.who,
        'act', pg_has_role(p.who, 'mt5credit_operator', 'USAGE'),
        'read', pg_has_role(p.who, 'mt5credit_operator', 'USAGE')
                OR pg_has_role(p.who, 'mt5credit_reader', 'USAGE'),
        'second_factor', EXISTS (SELECT 1 FROM person_totp t
                                 JOIN pg_roles r ON r.oid = t.person
                                 WHERE r.rolname = p.who))
    FROM (SELECT person() AS who) p
$$;


ALTER FUNCTION mt5credit.console_whoami() OWNER TO mt5credit_owner;

--
-- Name: convert_minor(bigint, text, text, numeric); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.convert_minor(p_amount_minor bigint, p_from text, p_to text, p_rate numeric) RETURNS bigint
    LANGUAGE sql STABLE STRICT
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT round(p_amount_minor * p_rate
                 * power(10::numeric, t.minor_digits - f.minor_digits))::bigint
    FROM currency f, currency t
    WHERE f.code = p_from AND t.code = p_to
$$;


ALTER FUNCTION mt5credit.convert_minor(p_amount_minor bigint, p_from text, p_to text, p_rate numeric) OWNER TO mt5credit_owner;

SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: deposit; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.deposit (
    id bigint NOT NULL,
    client_id text NOT NULL,
    idempotency_key text NOT NULL,
    provider text NOT NULL,
    mt5_server text NOT NULL,
    mt5_login bigint NOT NULL,
    amount_minor bigint NOT NULL,
    currency text NOT NULL,
    account_currency text NOT NULL,
    credit_amount_minor bigint NOT NULL,
    fx_rate numeric,
    fx_source text,
    fx_at timestamp with time zone,
    status text DEFAULT 'created'::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    reference text GENERATED ALWAYS AS (('dep_'::text ||
CASE
    WHEN (id < 1000000) THEN lpad((id)::text, 6, '0'::text)
    ELSE (id)::text
END)) STORED NOT NULL,
    provider_session_id text,
    query_attempts integer DEFAULT 0 NOT NULL,
    next_query_at timestamp with time zone,
    query_given_up_at timestamp with time zone,
    CONSTRAINT deposit_amount_minor_check CHECK ((amount_minor > 0)),
    CONSTRAINT deposit_check CHECK (((currency = account_currency) = (fx_rate IS NULL))),
    CONSTRAINT deposit_check1 CHECK (((fx_rate IS NULL) = (fx_source IS NULL))),
    CONSTRAINT deposit_check2 CHECK (((fx_rate IS NULL) = (fx_at IS NULL))),
    CONSTRAINT deposit_check3 CHECK (((currency <> account_currency) OR (credit_amount_minor = amount_minor))),
    CONSTRAINT deposit_credit_amount_minor_check CHECK ((credit_amount_minor > 0)),
    CONSTRAINT deposit_fx_rate_check CHECK ((fx_rate > (0)::numeric)),
    CONSTRAINT deposit_fx_source_check CHECK (((length(fx_source) >= 1) AND (length(fx_source) <= 200))),
    CONSTRAINT deposit_idempotency_key_check CHECK ((idempotency_key ~ '^[A-Za-z0-9_.:-]{8,128}$'::text)),
    CONSTRAINT deposit_provider_check CHECK ((provider ~ '^[a-z][a-z0-9_-]{0,31}$'::text)),
    CONSTRAINT deposit_provider_session_id_check CHECK ((provider_session_id ~ '^[A-Za-z0-9_-]{1,255}$'::text)),
    CONSTRAINT deposit_query_attempts_check CHECK ((query_attempts >= 0)),
    CONSTRAINT deposit_status_check CHECK ((status = ANY (ARRAY['created'::text, 'pending'::text, 'succeeded'::text, 'failed'::text, 'closed'::text])))
);


ALTER TABLE mt5credit.deposit OWNER TO mt5credit_owner;

--
-- Name: TABLE deposit; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.deposit IS 'A deposit our server created for a logged-in client: which of their MT5 accounts to fund, the expected payment and the converted credit.';


--
-- Name: COLUMN deposit.credit_amount_minor; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.deposit.credit_amount_minor IS 'amount_minor converted once at creation: round(amount * rate * 10^(account digits - payment digits)), half away from zero.';


--
-- Name: COLUMN deposit.fx_rate; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.deposit.fx_rate IS 'Units of account_currency per unit of currency (major units), exact decimal; NULL when no conversion happens.';


--
-- Name: create_deposit(text, text, text, text, bigint, bigint, text, numeric, text, timestamp with time zone); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.create_deposit(p_client_id text, p_idempotency_key text, p_provider text, p_mt5_server text, p_mt5_login bigint, p_amount_minor bigint, p_currency text, p_fx_rate numeric DEFAULT NULL::numeric, p_fx_source text DEFAULT NULL::text, p_fx_at timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS mt5credit.deposit
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_acc     client_account;
    v_dep     deposit;
    v_credit  bigint;
BEGIN
    SELECT * INTO v_acc FROM client_account
    WHERE mt5_server = p_mt5_server AND mt5_login = p_mt5_login
      AND client_id = p_client_id AND status = 'active';

    IF NOT FOUND THEN
        RAISE EXCEPTION 'client % does not own an active MT5 account %/%',
                        p_client_id, p_mt5_server, p_mt5_login
            USING ERRCODE = 'MC001';
    END IF;

    IF NOT EXISTS (SELECT 1 FROM currency WHERE code = p_currency) THEN
        RAISE EXCEPTION 'unknown currency %', p_currency
            USING ERRCODE = 'MC004';
    END IF;

    IF p_currency = v_acc.currency THEN
        IF p_fx_rate IS NOT NULL OR p_fx_source IS NOT NULL
           OR p_fx_at IS NOT NULL
        THEN
            RAISE EXCEPTION 'no FX rate may be given: payment and account '
                            'are both in %', p_currency
                USING ERRCODE = 'MC003';
        END IF;

        v_credit := p_amount_minor;

    ELSE
        IF p_fx_rate IS NULL OR p_fx_source IS NULL OR p_fx_at IS NULL THEN
            RAISE EXCEPTION 'payment in % to an account in % needs an FX '
                            'rate with its source and time',
                            p_currency, v_acc.currency
                USING ERRCODE = 'MC003';
        END IF;

        v_credit := convert_minor(p_amount_minor, p_currency, v_acc.currency,
                                  p_fx_rate);

        IF v_credit IS NULL OR v_credit <= 0 THEN
            RAISE EXCEPTION 'converted amount % is not positive', v_credit
                USING ERRCODE = 'MC003';
        END IF;
    END IF;

    -- a repeat is answered from the row (and burns no identity value)
    SELECT * INTO v_dep FROM deposit
    WHERE client_id = p_client_id AND idempotency_key = p_idempotency_key;

    IF NOT FOUND THEN
        INSERT INTO deposit (client_id, idempotency_key, provider,
                             mt5_server, mt5_login, amount_minor, currency,
                             account_currency, credit_amount_minor, fx_rate,
                             fx_source, fx_at)
        VALUES (p_client_id, p_idempotency_key, p_provider, p_mt5_server,
                p_mt5_login, p_amount_minor, p_currency, v_acc.currency,
                v_credit, p_fx_rate, p_fx_source, p_fx_at)
        ON CONFLICT (client_id, idempotency_key) DO NOTHING
        RETURNING * INTO v_dep;

        IF v_dep.id IS NOT NULL THEN
            RETURN v_dep;
        END IF;

        -- a concurrent request with the same key won the race
        SELECT * INTO v_dep FROM deposit
        WHERE client_id = p_client_id
          AND idempotency_key = p_idempotency_key;
    END IF;

    -- the key was used before: same request or a different one?

    IF v_dep.provider IS DISTINCT FROM p_provider
       OR v_dep.mt5_server IS DISTINCT FROM p_mt5_server
       OR v_dep.mt5_login IS DISTINCT FROM p_mt5_login
       OR v_dep.amount_minor IS DISTINCT FROM p_amount_minor
       OR v_dep.currency IS DISTINCT FROM p_currency
       OR v_dep.fx_rate IS DISTINCT FROM p_fx_rate
       OR v_dep.fx_source IS DISTINCT FROM p_fx_source
       OR v_dep.fx_at IS DISTINCT FROM p_fx_at
    THEN
        RAISE EXCEPTION 'idempotency key % was already used for deposit % '
                        'with different parameters',
                        p_idempotency_key, v_dep.reference
            USING ERRCODE = 'MC002';
    END IF;

    RETURN v_dep;
END
$$;


ALTER FUNCTION mt5credit.create_deposit(p_client_id text, p_idempotency_key text, p_provider text, p_mt5_server text, p_mt5_login bigint, p_amount_minor bigint, p_currency text, p_fx_rate numeric, p_fx_source text, p_fx_at timestamp with time zone) OWNER TO mt5credit_owner;

--
-- Name: credit_actor(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.credit_actor() RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT coalesce(nullif(current_setting('mt5credit.actor', true), ''),
                    mt5credit.person()::text)
$$;


ALTER FUNCTION mt5credit.credit_actor() OWNER TO mt5credit_owner;

--
-- Name: credit_case_decide(bigint, text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.credit_case_decide(p_proposal bigint, p_decision text, p_note text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    p       money_proposal;
    c       "case";
    v_cr    mt5_credit;
    v_new   bigint;
    v_rows  integer;
    v_from  timestamptz;
BEGIN
    SELECT * INTO p FROM money_proposal WHERE id = p_proposal FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no proposal %', p_proposal USING ERRCODE = 'MC044';
    END IF;
    c := desk_case(p.case_id);
    PERFORM decision_allowed('proposal ' || p.id, p.status, p.proposed_by,
                             p_decision);

    IF p_decision = 'approve' THEN
        -- 065: through the console, the person's code for this approval
        PERFORM step_up_require('approve', p_proposal::text);

        SELECT * INTO STRICT v_cr FROM mt5_credit WHERE id = p.credit_id
        FOR UPDATE;
        PERFORM set_config('mt5credit.actor', mt5credit.person(), true);
        PERFORM set_config('mt5credit.detail',
            jsonb_build_object('case', c.id, 'proposal', p.id,
                               'proposed_by', p.proposed_by,
                               'approved_by', mt5credit.person())::text, true);

        IF p.action = 'settle_done' THEN
            -- 033: the worker checks the deal at its next round; nothing
            -- is recorded until it has
            UPDATE mt5_credit
            SET next_check_at = clock_timestamp()
            WHERE id = v_cr.id AND status = 'unknown';
            GET DIAGNOSTICS v_rows = ROW_COUNT;
            IF v_rows <> 1 THEN
                RAISE EXCEPTION 'credit % is % now, no longer unknown: '
                                'nothing settled', v_cr.id, v_cr.status
                    USING ERRCODE = 'MC048';
            END IF;
        ELSIF p.action = 'settle_failed' THEN
            -- 032: an unknown credit two people found has no deal
            UPDATE mt5_credit
            SET status = 'failed', next_check_at = NULL, updated_at = now()
            WHERE id = v_cr.id AND status = 'unknown';
            GET DIAGNOSTICS v_rows = ROW_COUNT;
            IF v_rows <> 1 THEN
                RAISE EXCEPTION 'credit % is % now, no longer unknown: '
                                'nothing settled', v_cr.id, v_cr.status
                    USING ERRCODE = 'MC048';
            END IF;
        ELSIF p.action = 'requeue_credit' THEN
            UPDATE mt5_credit
            SET status = 'pending', claimed_at = NULL, claimed_by = NULL,
                lease_expires_at = NULL, updated_at = now()
            WHERE id = v_cr.id AND status = 'failed';
            GET DIAGNOSTICS v_rows = ROW_COUNT;
            IF v_rows <> 1 THEN
                RAISE EXCEPTION 'credit % is % now, no longer failed: '
                                'nothing re-queued', v_cr.id, v_cr.status
                    USING ERRCODE = 'MC048';
            END IF;
        ELSIF p.action = 'release_hold' THEN
            -- 079: released, it goes where any new credit goes: to the
            -- queue, or, within a week of a rewind, to a lookup first (the
            -- lost timeline may have released and credited it already)
            v_from := (SELECT min(r.lost_from) FROM database_rewind r
                       WHERE r.at > clock_timestamp() - interval '7 days');
            UPDATE mt5_credit
            SET status = CASE WHEN v_from IS NULL THEN 'pending'
                              ELSE 'unknown' END,
                attempts = attempts + CASE WHEN v_from IS NULL THEN 0
                                           ELSE 1 END,
                lease_expires_at = CASE WHEN v_from IS NOT NULL
                                        THEN clock_timestamp() END,
                next_check_at = NULL,
                look_from = CASE WHEN v_from IS NOT NULL
                                 THEN least(coalesce(look_from, v_from),
                                            v_from)
                                 ELSE look_from END
            WHERE id = v_cr.id AND status = 'held';
            GET DIAGNOSTICS v_rows = ROW_COUNT;
            IF v_rows <> 1 THEN
                RAISE EXCEPTION 'credit % is % now, no longer held: '
                                'nothing released', v_cr.id, v_cr.status
                    USING ERRCODE = 'MC048';
            END IF;
        ELSIF p.action = 'return_hold' THEN
            -- 079: never credited; the payment goes back to its source
            -- through the provider, which a person does there
            UPDATE mt5_credit
            SET status = 'failed', next_check_at = NULL
            WHERE id = v_cr.id AND status = 'held';
            GET DIAGNOSTICS v_rows = ROW_COUNT;
            IF v_rows <> 1 THEN
                RAISE EXCEPTION 'credit % is % now, no longer held: '
                                'nothing returned', v_cr.id, v_cr.status
                    USING ERRCODE = 'MC048';
            END IF;
        ELSE
            INSERT INTO mt5_credit (kind, direction, original_credit_id,
                                    deposit_id, provider, provider_payment_id,
                                    mt5_server, mt5_login, amount_minor,
                                    currency, paid_amount_minor,
                                    paid_currency)
            VALUES ('correction',
                    CASE p.action WHEN 'correcting_credit' THEN 'credit'
                                  ELSE 'debit' END,
                    v_cr.id, v_cr.deposit_id, v_cr.provider,
                    'correction:' || p.id, v_cr.mt5_server, v_cr.mt5_login,
                    p.amount_minor, p.currency, p.amount_minor, p.currency)
            RETURNING id INTO v_new;
        END IF;
    END IF;

    UPDATE money_proposal
    SET status = CASE p_decision WHEN 'approve' THEN 'approved'
                                 WHEN 'reject' THEN 'rejected'
                                 ELSE 'withdrawn' END,
        decided_by = mt5credit.person(), decided_at = clock_timestamp(),
        decision_note = p_note, result_credit_id = v_new
    WHERE id = p.id AND status = 'proposed';

    -- approved: the case waits for the worker's outcome and a person's
    -- resolution; rejected or withdrawn: back to whoever had it
    UPDATE "case"
    SET status = CASE WHEN p_decision = 'approve' THEN 'pending_resolution'
                      WHEN c.assigned_to IS NOT NULL THEN 'assigned'
                      ELSE 'open' END
    WHERE id = c.id;

    PERFORM desk_record(c.id, p_decision,
        jsonb_build_object('status', c.status, 'proposal', p.id,
                           'credit_status', v_cr.status),
        jsonb_build_object('proposal_status', p_decision,
                           'credit', p.credit_id,
                           'correction_credit', v_new),
        p_note, NULL);
    RETURN coalesce(v_new, p.credit_id);
END
$$;


ALTER FUNCTION mt5credit.credit_case_decide(p_proposal bigint, p_decision text, p_note text) OWNER TO mt5credit_owner;

--
-- Name: credit_case_propose(bigint, text, bigint, text, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.credit_case_propose(p_case bigint, p_action text, p_credit_id bigint, p_amount text, p_note text, p_evidence jsonb) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    c       "case" := desk_case(p_case);
    v_cr    mt5_credit;
    v_id    bigint;
    v_amount_minor  bigint;
BEGIN
    PERFORM desk_require_open(c);
    SELECT * INTO v_cr FROM mt5_credit
    WHERE id = coalesce(p_credit_id, c.credit_id);
    IF NOT FOUND THEN
        RAISE EXCEPTION 'case %: which credit? none given and none on the '
                        'case', p_case USING ERRCODE = 'MC048';
    END IF;
    IF p_action = 'settle_failed' THEN
        -- 032: an unknown credit settled as failed, on evidence
        IF v_cr.status <> 'unknown' THEN
            RAISE EXCEPTION 'credit % is %: only an unknown credit is '
                            'settled', v_cr.id, v_cr.status
                USING ERRCODE = 'MC048';
        END IF;
        IF jsonb_array_length(coalesce(p_evidence, '[]')) = 0 THEN
            RAISE EXCEPTION 'settling credit % as failed needs evidence that '
                            'it has no deal (--evidence)', v_cr.id
                USING ERRCODE = 'MC048';
        END IF;
    END IF;
    -- 079: a hold is released or returned while the credit is held
    IF p_action IN ('release_hold', 'return_hold')
       AND v_cr.status <> 'held'
    THEN
        RAISE EXCEPTION 'credit % is %: only a held credit is released or '
                        'returned', v_cr.id, v_cr.status
            USING ERRCODE = 'MC048';
    END IF;
    IF p_action = 'requeue_credit' AND v_cr.status <> 'failed' THEN
        RAISE EXCEPTION 'credit % is %: only a failed credit can be '
                        're-queued', v_cr.id, v_cr.status
            USING ERRCODE = 'MC048';
    END IF;
    -- a correction is claimed only once the credit it adjusts is done:
    -- proposed for one that is not, it would wait for ever (023)
    IF p_action IN ('correcting_credit', 'correcting_debit')
       AND v_cr.status <> 'done'
    THEN
        RAISE EXCEPTION 'credit % is %: a correction adjusts a done credit; '
                        'settle this one first', v_cr.id, v_cr.status
            USING ERRCODE = 'MC048';
    END IF;
    IF p_action IN ('correcting_credit', 'correcting_debit') THEN
        v_amount_minor := exact_minor(p_amount, v_cr.currency,
                                      'a correction', '12.50');
    END IF;

    -- 065: through the console, the person's code for this proposal
    PERFORM step_up_require('propose', p_case::text, p_action,
                            p_credit_id::text, p_amount);

    INSERT INTO money_proposal (case_id, action, credit_id, amount_minor,
                                currency, note, evidence, proposed_by)
    VALUES (p_case, p_action, v_cr.id,
            v_amount_minor,
            CASE WHEN p_action IN ('correcting_credit', 'correcting_debit')
                 THEN v_cr.currency END,
            p_note, coalesce(p_evidence, '[]'), mt5credit.person())
    RETURNING id INTO v_id;

    UPDATE "case" SET status = 'pending_resolution' WHERE id = p_case;
    PERFORM desk_record(p_case, 'propose',
        jsonb_build_object('status', c.status),
        jsonb_build_object('status', 'pending_resolution', 'proposal', v_id,
                           'action', p_action, 'credit', v_cr.id,
                           'amount_minor', v_amount_minor,
                           'currency', v_cr.currency),
        p_note, p_evidence);
    RETURN v_id;
END
$$;


ALTER FUNCTION mt5credit.credit_case_propose(p_case bigint, p_action text, p_credit_id bigint, p_amount text, p_note text, p_evidence jsonb) OWNER TO mt5credit_owner;

--
-- Name: credit_detail(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.credit_detail() RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
    SELECT coalesce(nullif(current_setting('mt5credit.detail', true), ''),
                    '{}')::jsonb
$$;


ALTER FUNCTION mt5credit.credit_detail() OWNER TO mt5credit_owner;

--
-- Name: credit_done_closes_no_answer(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.credit_done_closes_no_answer() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_case  "case";
BEGIN
    FOR v_case IN
        SELECT * FROM "case"
        WHERE credit_id = NEW.id AND kind = 'mt5_no_answer'
          AND status IN ('open', 'assigned')
        FOR UPDATE
    LOOP
        UPDATE "case"
        SET status = 'resolved', resolution = 'settled_by_lookup',
            resolved_by = credit_actor(), resolved_at = now()
        WHERE id = v_case.id AND status = v_case.status;

        INSERT INTO case_action (case_id, action, actor, before, after, note)
        VALUES (v_case.id, 'resolve', credit_actor(),
                jsonb_build_object('status', v_case.status),
                jsonb_build_object('status', 'resolved',
                                   'resolution', 'settled_by_lookup',
                                   'credit_status', NEW.status,
                                   'deal', NEW.mt5_deal_ticket),
                'MT5 answered: the credit is done with deal '
                || NEW.mt5_deal_ticket);
    END LOOP;

    RETURN NULL;
END
$$;


ALTER FUNCTION mt5credit.credit_done_closes_no_answer() OWNER TO mt5credit_owner;

--
-- Name: credit_failed(bigint, integer, text, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.credit_failed(p_id bigint, p_attempt integer, p_case_kind text, p_worker text, p_detail jsonb) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_dep  bigint;
BEGIN
    PERFORM set_actor(p_worker, p_detail);

    UPDATE mt5_credit SET status = 'failed'
    WHERE id = p_id AND status = 'claimed' AND attempts = p_attempt
    RETURNING deposit_id INTO v_dep;

    IF NOT FOUND THEN
        RETURN false;
    END IF;

    PERFORM open_case(p_case_kind, 'high',
                      p_case_kind || ':credit:' || p_id || ':' || p_attempt,
                      coalesce(p_detail, '{}'::jsonb)
                      || jsonb_build_object('attempt', p_attempt),
                      p_id, v_dep, NULL);
    RETURN true;
END
$$;


ALTER FUNCTION mt5credit.credit_failed(p_id bigint, p_attempt integer, p_case_kind text, p_worker text, p_detail jsonb) OWNER TO mt5credit_owner;

--
-- Name: credit_guard_and_log(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.credit_guard_and_log() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.status <> 'pending' OR NEW.attempts <> 0
           OR NEW.mt5_deal_ticket IS NOT NULL
        THEN
            RAISE EXCEPTION 'credit must be created pending, unattempted'
                USING ERRCODE = 'MC010';
        END IF;

        INSERT INTO credit_history (credit_id, from_status, to_status,
                                    attempts, actor, detail)
        VALUES (NEW.id, NULL, NEW.status, NEW.attempts,
                coalesce(batch_entry('c' || NEW.id::text), credit_actor()),
                credit_detail());
        RETURN NEW;
    END IF;

    -- what a credit is about never changes after creation
    IF (NEW.kind, NEW.direction, NEW.original_credit_id, NEW.deposit_id,
        NEW.provider, NEW.provider_payment_id, NEW.mt5_server, NEW.mt5_login,
        NEW.amount_minor, NEW.currency, NEW.paid_amount_minor,
        NEW.paid_currency, NEW.fx_rate, NEW.fx_source, NEW.fx_at)
       IS DISTINCT FROM
       (OLD.kind, OLD.direction, OLD.original_credit_id, OLD.deposit_id,
        OLD.provider, OLD.provider_payment_id, OLD.mt5_server, OLD.mt5_login,
        OLD.amount_minor, OLD.currency, OLD.paid_amount_minor,
        OLD.paid_currency, OLD.fx_rate, OLD.fx_source, OLD.fx_at)
    THEN
        RAISE EXCEPTION 'credit % is immutable except for its state', OLD.id
            USING ERRCODE = 'MC011';
    END IF;

    -- a recorded deal ticket is evidence; it is never replaced
    IF OLD.mt5_deal_ticket IS NOT NULL
       AND NEW.mt5_deal_ticket IS DISTINCT FROM OLD.mt5_deal_ticket
    THEN
        RAISE EXCEPTION 'credit % already has deal ticket %',
                        OLD.id, OLD.mt5_deal_ticket
            USING ERRCODE = 'MC011';
    END IF;

    IF NEW.attempts < OLD.attempts THEN
        RAISE EXCEPTION 'credit % attempts cannot go down', OLD.id
            USING ERRCODE = 'MC011';
    END IF;

    IF NEW.status IS DISTINCT FROM OLD.status THEN
        IF NOT EXISTS (SELECT 1 FROM credit_transition
                       WHERE from_status = OLD.status
                         AND to_status = NEW.status)
        THEN
            RAISE EXCEPTION 'credit %: % -> % is not a legal transition',
                            OLD.id, OLD.status, NEW.status
                USING ERRCODE = 'MC012';
        END IF;

        INSERT INTO credit_history (credit_id, from_status, to_status,
                                    attempts, actor, detail)
        VALUES (NEW.id, OLD.status, NEW.status, NEW.attempts, credit_actor(),
                credit_detail());
    END IF;

    NEW.updated_at := now();
    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.credit_guard_and_log() OWNER TO mt5credit_owner;

--
-- Name: credit_held_for_fixed(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.credit_held_for_fixed() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    RAISE EXCEPTION 'credit %: why it was held never changes', OLD.id
        USING ERRCODE = 'MC011';
END
$$;


ALTER FUNCTION mt5credit.credit_held_for_fixed() OWNER TO mt5credit_owner;

--
-- Name: credit_inherit_withdrawal(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.credit_inherit_withdrawal() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    IF NEW.kind = 'correction' AND NEW.deposit_id IS NULL
       AND NEW.withdrawal_id IS NULL
    THEN
        SELECT withdrawal_id INTO NEW.withdrawal_id
        FROM mt5_credit WHERE id = NEW.original_credit_id;
    END IF;
    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.credit_inherit_withdrawal() OWNER TO mt5credit_owner;

--
-- Name: credit_latency_count(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.credit_latency_count() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_ms  bigint := credit_latency_ms(NEW.created_at, NEW.updated_at);
BEGIN
    INSERT INTO credit_latency AS l (kind, le, shard, n, sum_ms)
    VALUES (NEW.kind, credit_latency_le(v_ms), (NEW.id % 8)::smallint, 1,
            v_ms)
    ON CONFLICT (kind, le, shard)
    DO UPDATE SET n = l.n + 1, sum_ms = l.sum_ms + EXCLUDED.sum_ms;

    RETURN NULL;
END
$$;


ALTER FUNCTION mt5credit.credit_latency_count() OWNER TO mt5credit_owner;

--
-- Name: credit_latency_le(bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.credit_latency_le(p_ms bigint) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    RETURN CASE
           WHEN p_ms <= 50 THEN '0.05'
           WHEN p_ms <= 100 THEN '0.1'
           WHEN p_ms <= 250 THEN '0.25'
           WHEN p_ms <= 500 THEN '0.5'
           WHEN p_ms <= 1000 THEN '1'
           WHEN p_ms <= 2500 THEN '2.5'
           WHEN p_ms <= 5000 THEN '5'
           WHEN p_ms <= 10000 THEN '10'
           WHEN p_ms <= 30000 THEN '30'
           WHEN p_ms <= 60000 THEN '60'
           WHEN p_ms <= 300000 THEN '300'
           ELSE '+Inf' END;
END
$$;


ALTER FUNCTION mt5credit.credit_latency_le(p_ms bigint) OWNER TO mt5credit_owner;

--
-- Name: credit_latency_ms(timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.credit_latency_ms(p_created timestamp with time zone, p_done timestamp with time zone) RETURNS bigint
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    RETURN greatest(0, round(extract(epoch FROM p_done - p_created)
                             * 1000))::bigint;
END
$$;


ALTER FUNCTION mt5credit.credit_latency_ms(p_created timestamp with time zone, p_done timestamp with time zone) OWNER TO mt5credit_owner;

--
-- Name: credit_on_hold(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.credit_on_hold() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_detail  text := current_setting('mt5credit.detail', true);
    v_actor   text := current_setting('mt5credit.actor', true);
    v_rows    integer;
BEGIN
    -- the inserter's transaction: its actor and detail are put back
    -- after; in an ingest_batch(), the element's own actor (062's map)
    PERFORM set_config('mt5credit.actor',
        coalesce(batch_entry('c' || NEW.id::text), v_actor, ''), true);
    PERFORM set_config('mt5credit.detail',
        (coalesce(nullif(v_detail, ''), '{}')::jsonb
         || jsonb_build_object('held_for', NEW.held_for))::text, true);
    UPDATE mt5_credit SET status = 'held'
    WHERE id = NEW.id AND status = 'pending';
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    PERFORM set_config('mt5credit.detail', coalesce(v_detail, ''), true);
    PERFORM set_config('mt5credit.actor', coalesce(v_actor, ''), true);
    IF v_rows <> 1 THEN
        RAISE EXCEPTION 'credit %: held as it was born, but it was not '
                        'pending', NEW.id
            USING ERRCODE = 'MC012';
    END IF;

    PERFORM open_case('risk_hold', 'medium', 'risk_hold:credit:' || NEW.id,
                      jsonb_build_object('held_for', NEW.held_for,
                                         'credit', jsonb_build_object(
                                             'id', NEW.id,
                                             'reference', NEW.reference,
                                             'mt5_server', NEW.mt5_server,
                                             'mt5_login', NEW.mt5_login)),
                      NEW.id, NEW.deposit_id, NULL,
                      NEW.amount_minor, NEW.currency);
    RETURN NULL;
END
$$;


ALTER FUNCTION mt5credit.credit_on_hold() OWNER TO mt5credit_owner;

--
-- Name: credit_orphan_deal(bigint, integer, bigint, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.credit_orphan_deal(p_id bigint, p_attempt integer, p_ticket bigint, p_worker text, p_detail jsonb) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_credit  mt5_credit%ROWTYPE;
BEGIN
    IF p_ticket IS NULL OR p_ticket <= 0 THEN
        RAISE EXCEPTION 'an orphan deal needs its ticket'
            USING ERRCODE = 'MC022';
    END IF;

    SELECT * INTO v_credit FROM mt5_credit WHERE id = p_id;

    IF NOT FOUND THEN
        RAISE EXCEPTION 'credit % does not exist', p_id
            USING ERRCODE = 'MC022';
    END IF;

    IF v_credit.mt5_deal_ticket = p_ticket THEN
        RETURN false;
    END IF;

    PERFORM set_actor(p_worker, p_detail);
    PERFORM open_case('orphan_deal', 'critical',
                      'orphan_deal:credit:' || p_id || ':ticket:' || p_ticket,
                      coalesce(p_detail, '{}'::jsonb)
                      || jsonb_build_object(
                             'orphan_ticket', p_ticket,
                             'attempt', p_attempt,
                             'credit_status', v_credit.status,
                             'credit_attempts', v_credit.attempts,
                             'recorded_ticket', v_credit.mt5_deal_ticket,
                             'seen_at', clock_timestamp()),
                      p_id, v_credit.deposit_id, NULL,
                      v_credit.amount_minor, v_credit.currency);
    RETURN true;
END
$$;


ALTER FUNCTION mt5credit.credit_orphan_deal(p_id bigint, p_attempt integer, p_ticket bigint, p_worker text, p_detail jsonb) OWNER TO mt5credit_owner;

--
-- Name: credit_release(bigint, integer, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.credit_release(p_id bigint, p_attempt integer, p_worker text, p_detail jsonb) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    PERFORM set_actor(p_worker, p_detail);

    UPDATE mt5_credit SET status = 'pending', lease_expires_at = NULL
    WHERE id = p_id AND status = 'claimed' AND attempts = p_attempt;

    RETURN FOUND;
END
$$;


ALTER FUNCTION mt5credit.credit_release(p_id bigint, p_attempt integer, p_worker text, p_detail jsonb) OWNER TO mt5credit_owner;

--
-- Name: credit_risk_facts_fixed(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.credit_risk_facts_fixed() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    IF OLD.payer_name IS NOT NULL AND NEW.payer_name IS NULL
       AND OLD.payer_name_erased_at IS NULL
       AND NEW.payer_name_erased_at IS NOT NULL
       AND (NEW.instrument, NEW.provider_signal)
           IS NOT DISTINCT FROM (OLD.instrument, OLD.provider_signal)
    THEN
        RETURN NEW;
    END IF;

    RAISE EXCEPTION 'credit %: what the provider signed of it never changes',
                    OLD.id
        USING ERRCODE = 'MC011';
END
$$;


ALTER FUNCTION mt5credit.credit_risk_facts_fixed() OWNER TO mt5credit_owner;

--
-- Name: credit_succeeded(bigint, integer, bigint, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.credit_succeeded(p_id bigint, p_attempt integer, p_ticket bigint, p_worker text, p_detail jsonb) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    PERFORM set_actor(p_worker, p_detail);

    UPDATE mt5_credit SET status = 'done', mt5_deal_ticket = p_ticket
    WHERE id = p_id AND status = 'claimed' AND attempts = p_attempt;

    RETURN FOUND;
END
$$;


ALTER FUNCTION mt5credit.credit_succeeded(p_id bigint, p_attempt integer, p_ticket bigint, p_worker text, p_detail jsonb) OWNER TO mt5credit_owner;

--
-- Name: credit_unknown(bigint, integer, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.credit_unknown(p_id bigint, p_attempt integer, p_worker text, p_detail jsonb) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    PERFORM set_actor(p_worker, p_detail);

    UPDATE mt5_credit SET status = 'unknown'
    WHERE id = p_id AND status = 'claimed' AND attempts = p_attempt;

    RETURN FOUND;
END
$$;


ALTER FUNCTION mt5credit.credit_unknown(p_id bigint, p_attempt integer, p_worker text, p_detail jsonb) OWNER TO mt5credit_owner;

--
-- Name: credit_withdrawal_fixed(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.credit_withdrawal_fixed() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF NEW.withdrawal_id IS DISTINCT FROM OLD.withdrawal_id THEN
        RAISE EXCEPTION 'credit % is immutable except for its state', OLD.id
            USING ERRCODE = 'MC011';
    END IF;
    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.credit_withdrawal_fixed() OWNER TO mt5credit_owner;

--
-- Name: database_rewound(text, integer, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.database_rewound(p_worker text, p_lease_seconds integer, p_detail jsonb) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    r  record;
BEGIN
    SELECT * INTO r FROM rewind_begin(p_worker, p_lease_seconds, p_detail,
                                      'database_rewound', 'critical');

    INSERT INTO database_timeline (system_identifier, timeline, recorded_by,
                                   rewind_id)
    SELECT t.system_identifier, t.timeline, p_worker, r.rewind_id
    FROM database_timeline_now() t
    ON CONFLICT DO NOTHING;

    RETURN r.credits;
END
$$;


ALTER FUNCTION mt5credit.database_rewound(p_worker text, p_lease_seconds integer, p_detail jsonb) OWNER TO mt5credit_owner;

--
-- Name: database_timeline_now(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.database_timeline_now(OUT system_identifier text, OUT timeline integer) RETURNS record
    LANGUAGE sql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT (SELECT s.system_identifier::text FROM pg_control_system() s),
           ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))
               ::bit(32)::integer
$$;


ALTER FUNCTION mt5credit.database_timeline_now(OUT system_identifier text, OUT timeline integer) OWNER TO mt5credit_owner;

--
-- Name: db_identity(bigint[], integer[]); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.db_identity(p_credits bigint[], p_attempts integer[]) RETURNS TABLE(system_identifier text, timeline integer, behind integer, behind_credit bigint, behind_attempts integer)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT (SELECT s.system_identifier::text FROM pg_control_system() s),
           (SELECT c.timeline_id FROM pg_control_checkpoint() c),
           (SELECT count(*)::integer
            FROM unnest(p_credits, p_attempts) f (id, attempts)
            LEFT JOIN mt5_credit c ON c.id = f.id
            -- 037: an absent credit kept at attempt 0 was handled
            WHERE (c.id IS NULL AND f.attempts > 0)
               OR c.attempts < f.attempts),
           b.id, b.attempts
    FROM (SELECT 1) one
    LEFT JOIN LATERAL (
        SELECT f.id, coalesce(c.attempts, 0) AS attempts
        FROM unnest(p_credits, p_attempts) f (id, attempts)
        LEFT JOIN mt5_credit c ON c.id = f.id
        WHERE (c.id IS NULL AND f.attempts > 0) OR c.attempts < f.attempts
        ORDER BY f.id LIMIT 1) b ON true
$$;


ALTER FUNCTION mt5credit.db_identity(p_credits bigint[], p_attempts integer[]) OWNER TO mt5credit_owner;

--
-- Name: decision_allowed(text, text, text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.decision_allowed(p_what text, p_status text, p_proposed_by text, p_decision text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    IF p_status <> 'proposed' THEN
        RAISE EXCEPTION '% was already %', p_what, p_status
            USING ERRCODE = 'MC041';
    END IF;
    IF p_decision IS NULL OR p_decision NOT IN ('approve', 'reject',
                                                'withdraw')
    THEN
        RAISE EXCEPTION 'decide how? "%"', p_decision USING ERRCODE = 'MC047';
    END IF;
    IF p_decision = 'withdraw' AND p_proposed_by <> mt5credit.person() THEN
        RAISE EXCEPTION 'only % may withdraw %', p_proposed_by, p_what
            USING ERRCODE = 'MC049';
    END IF;
    IF p_decision <> 'withdraw' AND p_proposed_by = mt5credit.person() THEN
        RAISE EXCEPTION 'two-person rule: % proposed this and cannot % it; '
                        'another person must decide', mt5credit.person(),
                        p_decision
            USING ERRCODE = 'MC049';
    END IF;
END
$$;


ALTER FUNCTION mt5credit.decision_allowed(p_what text, p_status text, p_proposed_by text, p_decision text) OWNER TO mt5credit_owner;

--
-- Name: deployment_stamp(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.deployment_stamp() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        NEW.deployment_tag := (SELECT tag FROM deployment);
    ELSIF NEW.deployment_tag IS DISTINCT FROM OLD.deployment_tag THEN
        RAISE EXCEPTION '%: which deployment made it never changes',
                        TG_TABLE_NAME USING ERRCODE = 'MC011';
    END IF;
    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.deployment_stamp() OWNER TO mt5credit_owner;

--
-- Name: deployment_tag(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.deployment_tag() RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT tag FROM deployment
$$;


ALTER FUNCTION mt5credit.deployment_tag() OWNER TO mt5credit_owner;

--
-- Name: deposit_guard_and_log(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.deposit_guard_and_log() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_entry   text;
    v_actor   text;
    v_detail  jsonb;
BEGIN
    IF (NEW.client_id, NEW.idempotency_key, NEW.provider, NEW.mt5_server,
        NEW.mt5_login, NEW.amount_minor, NEW.currency, NEW.account_currency,
        NEW.credit_amount_minor, NEW.fx_rate, NEW.fx_source, NEW.fx_at,
        NEW.created_at)
       IS DISTINCT FROM
       (OLD.client_id, OLD.idempotency_key, OLD.provider, OLD.mt5_server,
        OLD.mt5_login, OLD.amount_minor, OLD.currency, OLD.account_currency,
        OLD.credit_amount_minor, OLD.fx_rate, OLD.fx_source, OLD.fx_at,
        OLD.created_at)
    THEN
        RAISE EXCEPTION 'deposit % is immutable except for its status',
                        OLD.id USING ERRCODE = 'MC050';
    END IF;

    IF NEW.status IS DISTINCT FROM OLD.status THEN
        IF NOT EXISTS (SELECT 1 FROM deposit_transition
                       WHERE from_status = OLD.status
                         AND to_status = NEW.status)
        THEN
            RAISE EXCEPTION 'deposit %: % -> % is not a legal transition',
                            OLD.id, OLD.status, NEW.status
                USING ERRCODE = 'MC051';
        END IF;

        v_entry := batch_entry('d' || OLD.id::text);
        IF v_entry IS NULL THEN
            v_actor := credit_actor();
            v_detail := credit_detail();
        ELSE
            v_actor := split_part(v_entry, chr(31), 1);
            v_detail := jsonb_build_object(
                'credit', split_part(v_entry, chr(31), 2)::bigint,
                'payment', split_part(v_entry, chr(31), 3),
                'source', 'credit:' || split_part(v_entry, chr(31), 2));
        END IF;

        INSERT INTO deposit_history (deposit_id, from_status, to_status,
                                     actor, detail)
        VALUES (OLD.id, OLD.status, NEW.status, v_actor, v_detail);
    END IF;

    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.deposit_guard_and_log() OWNER TO mt5credit_owner;

--
-- Name: deposit_observe(bigint, text, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.deposit_observe(p_deposit bigint, p_status text, p_source text, p_detail jsonb DEFAULT '{}'::jsonb) RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    d        deposit;
    v_rows   integer;
    v_case   bigint;
    v_saved  text;
BEGIN
    IF p_status IS NULL OR p_status NOT IN ('created', 'pending',
                                            'succeeded', 'failed', 'closed')
    THEN
        RAISE EXCEPTION 'not a deposit status: "%"', coalesce(p_status, '')
            USING ERRCODE = 'MC052';
    END IF;

    SELECT * INTO d FROM deposit WHERE id = p_deposit FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no deposit %', p_deposit USING ERRCODE = 'MC052';
    END IF;

    IF d.status = p_status THEN
        RETURN 'unchanged';
    END IF;

    IF EXISTS (SELECT 1 FROM deposit_transition
               WHERE from_status = d.status AND to_status = p_status)
    THEN
        -- the history row's detail, for this one update only: the
        -- caller's own detail (a credit's history) is put back after
        v_saved := current_setting('mt5credit.detail', true);
        PERFORM set_config('mt5credit.detail',
            (coalesce(p_detail, '{}')
             || jsonb_build_object('source', p_source))::text, true);

        UPDATE deposit SET status = p_status, updated_at = now()
        WHERE id = d.id AND status = d.status;
        GET DIAGNOSTICS v_rows = ROW_COUNT;

        PERFORM set_config('mt5credit.detail', coalesce(v_saved, ''), true);
        IF v_rows <> 1 THEN
            RAISE EXCEPTION 'deposit % moved under a lock', d.id
                USING ERRCODE = 'MC053';
        END IF;
        RETURN 'applied';
    END IF;

    v_case := open_case('deposit_status_conflict', 'high',
        'deposit_status_conflict:' || d.id || ':' || d.status || ':'
            || p_status,
        jsonb_build_object('deposit', d.reference, 'status', d.status,
                           'reported', p_status, 'source', p_source,
                           'detail', p_detail),
        NULL, d.id, NULL, d.amount_minor, d.currency);

    INSERT INTO deposit_conflict (deposit_id, status, reported, source,
                                  detail, case_id)
    VALUES (d.id, d.status, p_status, p_source, coalesce(p_detail, '{}'),
            v_case);
    RETURN 'conflict';
END
$$;


ALTER FUNCTION mt5credit.deposit_observe(p_deposit bigint, p_status text, p_source text, p_detail jsonb) OWNER TO mt5credit_owner;

--
-- Name: FUNCTION deposit_observe(p_deposit bigint, p_status text, p_source text, p_detail jsonb); Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON FUNCTION mt5credit.deposit_observe(p_deposit bigint, p_status text, p_source text, p_detail jsonb) IS 'The one way a deposit''s status changes: forward applied, backwards recorded as a conflict with a case.';


--
-- Name: deposit_refund_state(text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.deposit_refund_state(p_client_id text, p_reference text) RETURNS TABLE(reference text, refund_state text, refunded_minor bigint, open_count integer)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    WITH d AS (
        SELECT d.id, d.reference, d.amount_minor FROM deposit d
        WHERE d.client_id = p_client_id AND d.reference = p_reference
    ), back AS (
        SELECT r.deposit_id,
               CASE r.direction WHEN 'debit' THEN r.paid_amount_minor
                                ELSE -r.paid_amount_minor END AS amount,
               r.status = 'done' AS settled
        FROM mt5_credit r
        WHERE r.deposit_id IN (SELECT id FROM d)
          AND r.kind IN ('refund', 'chargeback')
        UNION ALL
        SELECT c.deposit_id, wr.amount_minor, wr.status = 'succeeded'
        FROM withdrawal_refund wr
        JOIN mt5_credit c ON c.id = wr.credit_id
        WHERE c.deposit_id IN (SELECT id FROM d)
          AND wr.status IN ('sending', 'unknown', 'accepted', 'succeeded')
    )
    SELECT d.reference,
           CASE
           WHEN count(b.deposit_id) = 0 THEN 'none'
           WHEN count(b.deposit_id) FILTER (WHERE NOT b.settled) > 0
           THEN 'refunding'
           WHEN coalesce(sum(b.amount), 0) >= d.amount_minor THEN 'refunded'
           WHEN coalesce(sum(b.amount), 0) > 0 THEN 'partially_refunded'
           ELSE 'none'
           END,
           coalesce(sum(b.amount) FILTER (WHERE b.settled), 0)::bigint,
           (count(b.deposit_id) FILTER (WHERE NOT b.settled))::integer
    FROM d
    LEFT JOIN back b ON b.deposit_id = d.id
    GROUP BY d.id, d.reference, d.amount_minor
$$;


ALTER FUNCTION mt5credit.deposit_refund_state(p_client_id text, p_reference text) OWNER TO mt5credit_owner;

--
-- Name: FUNCTION deposit_refund_state(p_client_id text, p_reference text); Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON FUNCTION mt5credit.deposit_refund_state(p_client_id text, p_reference text) IS 'The return page''s view of a deposit''s refunds and chargebacks, derived from their records: read-only, own deposits only.';


--
-- Name: deposit_set_session(text, text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.deposit_set_session(p_client_id text, p_reference text, p_session_id text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_rows  integer;
BEGIN
    UPDATE deposit SET provider_session_id = p_session_id
    WHERE client_id = p_client_id AND reference = p_reference
      AND (provider_session_id IS NULL
           OR provider_session_id = p_session_id);
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    IF v_rows <> 1 THEN
        RAISE EXCEPTION 'deposit % of client %: no such deposit, or it has '
                        'another session already', p_reference, p_client_id
            USING ERRCODE = 'MC060';
    END IF;
END
$$;


ALTER FUNCTION mt5credit.deposit_set_session(p_client_id text, p_reference text, p_session_id text) OWNER TO mt5credit_owner;

--
-- Name: deposit_status(text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.deposit_status(p_client_id text, p_reference text) RETURNS TABLE(reference text, status text, amount_minor bigint, currency text, credit_status text, credited boolean)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT d.reference, d.status, d.amount_minor, d.currency,
           c.status, coalesce(c.status = 'done', false)
    FROM deposit d
    LEFT JOIN mt5_credit c ON c.deposit_id = d.id AND c.kind = 'deposit'
    WHERE d.client_id = p_client_id AND d.reference = p_reference
$$;


ALTER FUNCTION mt5credit.deposit_status(p_client_id text, p_reference text) OWNER TO mt5credit_owner;

--
-- Name: FUNCTION deposit_status(p_client_id text, p_reference text); Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON FUNCTION mt5credit.deposit_status(p_client_id text, p_reference text) IS 'The return page''s only view of a deposit: read-only, own deposits only.';


--
-- Name: case; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit."case" (
    id bigint NOT NULL,
    kind text NOT NULL,
    severity text NOT NULL,
    status text DEFAULT 'open'::text NOT NULL,
    credit_id bigint,
    deposit_id bigint,
    webhook_event_id bigint,
    details jsonb DEFAULT '{}'::jsonb NOT NULL,
    dedupe_key text NOT NULL,
    opened_at timestamp with time zone DEFAULT now() NOT NULL,
    opened_by text NOT NULL,
    assigned_to text,
    resolved_by text,
    resolved_at timestamp with time zone,
    resolution text,
    amount_minor bigint,
    currency text,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT case_amount_has_currency CHECK (((amount_minor IS NULL) = (currency IS NULL))),
    CONSTRAINT case_amount_minor_check CHECK ((amount_minor >= 0)),
    CONSTRAINT case_check CHECK (((status <> 'assigned'::text) OR (assigned_to IS NOT NULL))),
    CONSTRAINT case_check1 CHECK (((status = 'resolved'::text) = ((resolved_by IS NOT NULL) AND (resolved_at IS NOT NULL) AND (resolution IS NOT NULL)))),
    CONSTRAINT case_details_check CHECK ((jsonb_typeof(details) = 'object'::text)),
    CONSTRAINT case_kind_check CHECK ((kind ~ '^[a-z][a-z0-9_]{2,63}$'::text)),
    CONSTRAINT case_resolution_known CHECK (((resolution IS NULL) OR (resolution = ANY (ARRAY['corrected'::text, 'accepted'::text, 'false_positive'::text, 'duplicate'::text, 'provider_fixed'::text, 'written_off'::text, 'not_money'::text, 'settled_by_lookup'::text])))),
    CONSTRAINT case_settled_only_no_answer CHECK (((resolution IS DISTINCT FROM 'settled_by_lookup'::text) OR (kind = 'mt5_no_answer'::text))),
    CONSTRAINT case_severity_check CHECK ((severity = ANY (ARRAY['low'::text, 'medium'::text, 'high'::text, 'critical'::text]))),
    CONSTRAINT case_status_check CHECK ((status = ANY (ARRAY['open'::text, 'assigned'::text, 'pending_resolution'::text, 'resolved'::text])))
);


ALTER TABLE mt5credit."case" OWNER TO mt5credit_owner;

--
-- Name: TABLE "case"; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit."case" IS 'Work for a person: what was found, about which rows, and how it ended. Nothing here moves money by itself.';


--
-- Name: desk_case(bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.desk_case(p_case bigint) RETURNS mt5credit."case"
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    c  "case";
BEGIN
    SELECT * INTO c FROM "case" WHERE id = p_case FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no case %', p_case USING ERRCODE = 'MC044';
    END IF;
    RETURN c;
END
$$;


ALTER FUNCTION mt5credit.desk_case(p_case bigint) OWNER TO mt5credit_owner;

--
-- Name: desk_record(bigint, text, jsonb, jsonb, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.desk_record(p_case bigint, p_action text, p_before jsonb, p_after jsonb, p_note text, p_evidence jsonb) RETURNS bigint
    LANGUAGE sql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    INSERT INTO case_action (case_id, action, actor, before, after, note,
                             evidence)
    VALUES (p_case, p_action, mt5credit.person(), coalesce(p_before, '{}'),
            coalesce(p_after, '{}'), p_note, coalesce(p_evidence, '[]'))
    RETURNING id
$$;


ALTER FUNCTION mt5credit.desk_record(p_case bigint, p_action text, p_before jsonb, p_after jsonb, p_note text, p_evidence jsonb) OWNER TO mt5credit_owner;

--
-- Name: desk_require_no_open_proposal(bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.desk_require_no_open_proposal(p_case bigint) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM money_proposal
               WHERE case_id = p_case AND status = 'proposed')
    THEN
        RAISE EXCEPTION 'case % has a proposal waiting for a decision',
                        p_case USING ERRCODE = 'MC046';
    END IF;
END
$$;


ALTER FUNCTION mt5credit.desk_require_no_open_proposal(p_case bigint) OWNER TO mt5credit_owner;

--
-- Name: desk_require_open(mt5credit."case"); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.desk_require_open(c mt5credit."case") RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF c.status = 'resolved' THEN
        RAISE EXCEPTION 'case % is resolved', c.id USING ERRCODE = 'MC045';
    END IF;
END
$$;


ALTER FUNCTION mt5credit.desk_require_open(c mt5credit."case") OWNER TO mt5credit_owner;

--
-- Name: event_replay(bigint, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.event_replay(p_event bigint, p_reason text) RETURNS TABLE(replay_id bigint, outcome text, credit_id bigint, detail text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    r  webhook_event_replay;
BEGIN
    r := event_replay_as(p_event, p_reason, NULL);
    RETURN QUERY SELECT r.id, r.outcome, r.credit_id, r.detail;
END
$$;


ALTER FUNCTION mt5credit.event_replay(p_event bigint, p_reason text) OWNER TO mt5credit_owner;

--
-- Name: person(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.person() RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_role  text := current_setting('role');
BEGIN
    IF v_role = 'none' THEN
        RETURN session_user;
    END IF;

    IF NOT person_is(v_role) THEN
        RAISE EXCEPTION 'acting as "%": a role set by SET ROLE acts only '
                        'if it is a person (a member of mt5credit_person, '
                        'no console login)', v_role
            USING ERRCODE = 'MC093';
    END IF;

    RETURN v_role;
END
$$;


ALTER FUNCTION mt5credit.person() OWNER TO mt5credit_owner;

--
-- Name: webhook_event_replay; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.webhook_event_replay (
    id bigint NOT NULL,
    event_id bigint NOT NULL,
    replayed_by text DEFAULT mt5credit.person() NOT NULL,
    replayed_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    reason text NOT NULL,
    recon_run_id bigint,
    outcome text NOT NULL,
    credit_id bigint,
    detail text,
    CONSTRAINT webhook_event_replay_check CHECK (((outcome <> ALL (ARRAY['credit_created'::text, 'already_credited'::text])) OR (credit_id IS NOT NULL))),
    CONSTRAINT webhook_event_replay_outcome_check CHECK ((outcome = ANY (ARRAY['credit_created'::text, 'already_credited'::text, 'case_opened'::text, 'status_recorded'::text, 'ignored'::text]))),
    CONSTRAINT webhook_event_replay_reason_check CHECK (((length(btrim(reason)) >= 1) AND (length(btrim(reason)) <= 2000)))
);


ALTER TABLE mt5credit.webhook_event_replay OWNER TO mt5credit_owner;

--
-- Name: TABLE webhook_event_replay; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.webhook_event_replay IS 'Each replay of a stored event through ingest''s rules: who, when, why, what came of it; append-only.';


--
-- Name: event_replay_as(bigint, text, bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.event_replay_as(p_event bigint, p_reason text, p_run bigint) RETURNS mt5credit.webhook_event_replay
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    e  webhook_event;
    x  record;
    r  webhook_event_replay;
BEGIN
    IF p_reason IS NULL OR btrim(p_reason) = '' THEN
        RAISE EXCEPTION 'a replay needs its reason' USING ERRCODE = 'MC040';
    END IF;

    SELECT * INTO e FROM webhook_event WHERE id = p_event FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no stored event %', p_event
            USING ERRCODE = 'MC041';
    END IF;

    PERFORM set_config('mt5credit.actor',
                       left('replay:' || mt5credit.person() || ':' || e.provider
                            || ':' || e.provider_event_id, 200), true);

    -- the bytes were JSON when they were stored (ingest() parsed them)
    x := ingest_facts(e.provider, e.event_type,
                      convert_from(e.raw_body, 'UTF8')::jsonb, e.id,
                      e.provider_event_id);

    INSERT INTO webhook_event_replay (event_id, reason, recon_run_id,
                                      outcome, credit_id, detail)
    VALUES (e.id, p_reason, p_run, x.disposition, x.credit_id, x.detail)
    RETURNING * INTO r;

    RETURN r;
END
$$;


ALTER FUNCTION mt5credit.event_replay_as(p_event bigint, p_reason text, p_run bigint) OWNER TO mt5credit_owner;

--
-- Name: event_show(bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.event_show(p_event bigint) RETURNS jsonb
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT jsonb_build_object(
        'id', e.id, 'provider', e.provider,
        'provider_event_id', e.provider_event_id,
        'event_type', e.event_type,
        'signature_scheme', e.signature_scheme,
        'signed_at', e.signed_at, 'received_at', e.received_at,
        'request_id', e.request_id,
        'body_sha256', encode(e.body_sha256, 'hex'),
        'bytes', length(e.raw_body),
        'raw_body', convert_from(e.raw_body, 'UTF8'),
        'disposition', e.disposition, 'credit_id', e.credit_id,
        'detail', e.detail,
        'conflicts', coalesce((SELECT jsonb_agg(jsonb_build_object(
                'id', k.id, 'body_sha256', encode(k.body_sha256, 'hex'),
                'received_at', k.received_at, 'request_id', k.request_id)
                ORDER BY k.id)
            FROM webhook_event_conflict k WHERE k.event_id = e.id), '[]'),
        'replays', coalesce((SELECT jsonb_agg(to_jsonb(r) - 'event_id'
                                              ORDER BY r.id)
            FROM webhook_event_replay r WHERE r.event_id = e.id), '[]'))
    FROM webhook_event e
    WHERE e.id = p_event
$$;


ALTER FUNCTION mt5credit.event_show(p_event bigint) OWNER TO mt5credit_owner;

--
-- Name: events_list(text, text, text, text, timestamp with time zone, integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.events_list(p_provider text, p_type text, p_disposition text, p_payment text, p_since timestamp with time zone, p_limit integer) RETURNS TABLE(id bigint, provider text, provider_event_id text, event_type text, signature_scheme text, received_at timestamp with time zone, disposition text, credit_id bigint, replays bigint, bytes integer, detail text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT * FROM mt5credit.events_list(p_provider, p_type, p_disposition,
                                        p_payment, NULL::text, p_since,
                                        NULL::timestamptz, NULL::text,
                                        p_limit)
$$;


ALTER FUNCTION mt5credit.events_list(p_provider text, p_type text, p_disposition text, p_payment text, p_since timestamp with time zone, p_limit integer) OWNER TO mt5credit_owner;

--
-- Name: FUNCTION events_list(p_provider text, p_type text, p_disposition text, p_payment text, p_since timestamp with time zone, p_limit integer); Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON FUNCTION mt5credit.events_list(p_provider text, p_type text, p_disposition text, p_payment text, p_since timestamp with time zone, p_limit integer) IS 'The previous release''s call of events_list() (039''s signature), kept as a wrapper (072)';


--
-- Name: events_list(text, text, text, text, text, timestamp with time zone, timestamp with time zone, text, integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.events_list(p_provider text, p_type text, p_disposition text, p_payment text, p_deposit text, p_since timestamp with time zone, p_until timestamp with time zone, p_request_id text, p_limit integer) RETURNS TABLE(id bigint, provider text, provider_event_id text, event_type text, signature_scheme text, received_at timestamp with time zone, disposition text, credit_id bigint, replays bigint, bytes integer, detail text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT e.id, e.provider, e.provider_event_id, e.event_type,
           e.signature_scheme, e.received_at, e.disposition, e.credit_id,
           (SELECT count(*) FROM webhook_event_replay r
            WHERE r.event_id = e.id),
           length(e.raw_body), e.detail
    FROM webhook_event e
    WHERE (p_provider IS NULL OR e.provider = p_provider)
      AND (p_type IS NULL OR e.event_type = p_type)
      AND (p_disposition IS NULL OR e.disposition = p_disposition)
      AND (p_since IS NULL OR e.received_at >= p_since)
      AND (p_until IS NULL OR e.received_at < p_until)
      -- the event, or the event a conflicting body under its id came to
      AND (p_request_id IS NULL OR e.request_id = p_request_id
           OR e.id IN (SELECT k.event_id FROM webhook_event_conflict k
                       WHERE k.request_id = p_request_id))
      AND (p_payment IS NULL
           OR position(convert_to(p_payment, 'UTF8') IN e.raw_body) > 0
           OR e.credit_id IN (SELECT c.id FROM mt5_credit c
                              WHERE c.provider_payment_id = p_payment))
      AND (p_deposit IS NULL
           OR position(convert_to(p_deposit, 'UTF8') IN e.raw_body) > 0
           OR e.credit_id IN (SELECT c.id FROM mt5_credit c
                              JOIN deposit d ON d.id = c.deposit_id
                              WHERE d.reference = p_deposit))
    ORDER BY e.id DESC
    LIMIT least(greatest(coalesce(p_limit, 50), 1), 10000)
$$;


ALTER FUNCTION mt5credit.events_list(p_provider text, p_type text, p_disposition text, p_payment text, p_deposit text, p_since timestamp with time zone, p_until timestamp with time zone, p_request_id text, p_limit integer) OWNER TO mt5credit_owner;

--
-- Name: exact_minor(text, text, text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.exact_minor(p_amount text, p_currency text, p_what text, p_example text) RETURNS bigint
    LANGUAGE plpgsql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $_$
DECLARE
    v_num  numeric;
BEGIN
    IF p_amount IS NULL OR p_amount !~ '^[0-9]{1,15}(\.[0-9]{1,8})?$' THEN
        RAISE EXCEPTION '% needs an amount like %, not "%"', p_what,
                        p_example, coalesce(p_amount, '')
            USING ERRCODE = 'MC048';
    END IF;
    v_num := major_to_minor(p_amount::numeric, p_currency);
    IF v_num IS NULL THEN
        RAISE EXCEPTION '% needs a known currency, not "%"', p_what,
                        coalesce(p_currency, '')
            USING ERRCODE = 'MC048';
    END IF;
    IF v_num <> trunc(v_num) OR v_num <= 0 THEN
        RAISE EXCEPTION '% is not a positive amount in whole minor units '
                        'of %', p_amount, p_currency
            USING ERRCODE = 'MC048';
    END IF;
    RETURN v_num::bigint;
END
$_$;


ALTER FUNCTION mt5credit.exact_minor(p_amount text, p_currency text, p_what text, p_example text) OWNER TO mt5credit_owner;

--
-- Name: exact_volume(text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.exact_volume(p_lots text, p_what text) RETURNS bigint
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $_$
BEGIN
    IF p_lots IS NULL OR p_lots !~ '^[0-9]{1,9}(\.[0-9]{1,4})?$'
       OR p_lots::numeric = 0
    THEN
        RAISE EXCEPTION '% needs a volume in lots like 0.5, at most 4 '
                        'decimals, not "%"', p_what, coalesce(p_lots, '')
            USING ERRCODE = 'MC048';
    END IF;
    RETURN (p_lots::numeric * 10000)::bigint;
END
$_$;


ALTER FUNCTION mt5credit.exact_volume(p_lots text, p_what text) OWNER TO mt5credit_owner;

--
-- Name: hold_case_guard(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.hold_case_guard() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    IF NEW.kind = 'risk_hold'
       AND EXISTS (SELECT 1 FROM mt5_credit k
                   WHERE k.id = NEW.credit_id AND k.status = 'held')
       OR NEW.kind = 'withdrawal_hold'
          AND EXISTS (SELECT 1 FROM withdrawal w
                      WHERE w.id = (NEW.details->'withdrawal'->>'id')::bigint
                        AND w.status = 'held'
                        AND jsonb_array_length(w.held_for)
                            = (NEW.details->'withdrawal'->>'hold')::integer)
    THEN
        RAISE EXCEPTION 'case %: what it holds is still held; two people '
                        'release or return it first', NEW.id
            USING ERRCODE = 'MC048';
    END IF;
    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.hold_case_guard() OWNER TO mt5credit_owner;

--
-- Name: ingest(text, text, bytea, text, bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.ingest(p_provider text, p_event_id text, p_raw_body bytea, p_scheme text, p_signed_at bigint) RETURNS TABLE(outcome text, credit_id bigint, event_row_id bigint, detail text)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT * FROM mt5credit.ingest(p_provider, p_event_id, p_raw_body,
                                   p_scheme, p_signed_at, NULL::text)
$$;


ALTER FUNCTION mt5credit.ingest(p_provider text, p_event_id text, p_raw_body bytea, p_scheme text, p_signed_at bigint) OWNER TO mt5credit_owner;

--
-- Name: ingest(text, text, bytea, text, bigint, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.ingest(p_provider text, p_event_id text, p_raw_body bytea, p_scheme text, p_signed_at bigint, p_request_id text) RETURNS TABLE(outcome text, credit_id bigint, event_row_id bigint, detail text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $_$
DECLARE
    v_body      jsonb;
    v_type      text;
    v_id        text;
    v_part      jsonpath;
    v_sha       bytea := sha256(p_raw_body);
    v_rid       text := CASE WHEN p_request_id ~ '^[0-9a-f]{32}$'
                             THEN p_request_id END;
    v_credit    bigint;
    v_row       bigint;
    v_old       webhook_event;
    v_conflict  bigint;
    v_case      bigint;
    x           record;
BEGIN
    -- the edge answers 200 after this transaction commits: durably, also
    -- when its session's own setting did not come through (a pooler that
    -- drops startup options)
    PERFORM set_config('synchronous_commit', 'on', true);

    BEGIN
        v_body := convert_from(p_raw_body, 'UTF8')::jsonb;
    EXCEPTION
        WHEN invalid_text_representation OR character_not_in_repertoire
             OR untranslatable_character OR invalid_parameter_value
        THEN
            RETURN QUERY SELECT * FROM ingest_malformed(p_provider,
                p_raw_body, v_sha, p_scheme, p_signed_at, v_rid,
                'body is not UTF-8 JSON');
            RETURN;
        -- nested past the parser's stack, or past jsonb's limits: these
        -- bytes can never parse, however often they come
        WHEN statement_too_complex OR program_limit_exceeded THEN
            RETURN QUERY SELECT * FROM ingest_malformed(p_provider,
                p_raw_body, v_sha, p_scheme, p_signed_at, v_rid,
                'body is JSON past what can be parsed (' || SQLERRM || ')');
            RETURN;
    END;

    IF jsonb_typeof(v_body) <> 'object' THEN
        RETURN QUERY SELECT * FROM ingest_malformed(p_provider, p_raw_body,
            v_sha, p_scheme, p_signed_at, v_rid,
            'body is not a JSON object');
        RETURN;
    END IF;

    -- where the provider's format keeps them (076)
    SELECT coalesce(p_event_id, e.event_id), e.event_type, e.event_part
    INTO v_id, v_type, v_part
    FROM payload_event(p_provider, v_body) e;

    IF v_id IS NULL THEN
        RETURN QUERY SELECT * FROM ingest_malformed(p_provider, p_raw_body,
            v_sha, p_scheme, p_signed_at, v_rid,
            'no event id (a string of 1..255 bytes where the provider''s '
            'format keeps it)');
        RETURN;
    END IF;

    PERFORM set_config('mt5credit.actor',
                       left('ingest:' || p_provider || ':' || v_id, 200),
                       true);

    -- the event is written as what most events are, the maker of the
    -- credit drawn here; facts that end otherwise update it below.  A
    -- drawn id no credit takes is a gap, as a rolled back insert leaves.
    v_credit := nextval('mt5credit.mt5_credit_id_seq');

    INSERT INTO webhook_event (provider, provider_event_id, event_type,
                               raw_body, body_sha256, signature_scheme,
                               signed_at, disposition, credit_id, request_id)
    VALUES (p_provider, v_id, v_type, p_raw_body, v_sha, p_scheme,
            to_timestamp(p_signed_at), 'credit_created', v_credit, v_rid)
    ON CONFLICT (provider, provider_event_id) DO NOTHING
    RETURNING id INTO v_row;

    IF v_row IS NULL THEN
        SELECT * INTO v_old FROM webhook_event
        WHERE provider = p_provider AND provider_event_id = v_id;

        -- the same bytes, or (076) the same event in another delivery's
        -- envelope (a body redacted by retention cannot say: a person's)
        IF v_old.body_sha256 = v_sha
           OR (v_part IS NOT NULL AND v_old.body_redacted_at IS NULL
               AND payload_value(v_body, v_part) IS NOT NULL
               AND payload_value(v_body, v_part)
                   = payload_value(convert_from(v_old.raw_body,
                                                'UTF8')::jsonb, v_part))
        THEN
            RETURN QUERY SELECT 'duplicate'::text, v_old.credit_id, v_old.id,
                                NULL::text;
            RETURN;
        END IF;

        INSERT INTO webhook_event_conflict (event_id, raw_body, body_sha256,
                                            signature_scheme, signed_at,
                                            request_id)
        VALUES (v_old.id, p_raw_body, v_sha, p_scheme,
                to_timestamp(p_signed_at), v_rid)
        ON CONFLICT (event_id, body_sha256) DO NOTHING
        RETURNING id INTO v_conflict;

        v_case := open_case('event_body_conflict', 'high',
                            'event_body_conflict:' || v_old.id || ':'
                                || encode(v_sha, 'hex'),
                            jsonb_build_object(
                                'provider', p_provider,
                                'provider_event_id', v_id,
                                'stored_sha256',
                                    encode(v_old.body_sha256, 'hex'),
                                'new_sha256', encode(v_sha, 'hex')),
                            v_old.credit_id, NULL, v_old.id);

        RETURN QUERY SELECT 'conflict'::text, NULL::bigint, v_old.id,
                            ('event id stored with other bytes: case '
                             || v_case)::text;
        RETURN;
    END IF;

    x := ingest_facts(p_provider, v_type, v_body, v_row, v_id, v_credit);

    -- written as it ended, unless it ended as written
    IF x.disposition IS DISTINCT FROM 'credit_created'
       OR x.credit_id IS DISTINCT FROM v_credit
       OR x.detail IS NOT NULL
    THEN
        UPDATE webhook_event
        SET disposition = x.disposition, credit_id = x.credit_id,
            detail = x.detail
        WHERE id = v_row;
    END IF;

    RETURN QUERY SELECT CASE
                        WHEN x.created THEN 'credit_created'
                        WHEN x.disposition = 'case_opened' THEN 'case_opened'
                        ELSE 'stored' END,
                        x.credit_id, v_row, x.detail;
END
$_$;


ALTER FUNCTION mt5credit.ingest(p_provider text, p_event_id text, p_raw_body bytea, p_scheme text, p_signed_at bigint, p_request_id text) OWNER TO mt5credit_owner;

--
-- Name: ingest_batch(text[], text[], bytea[], text[], bigint[], text[]); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.ingest_batch(p_provider text[], p_event_id text[], p_raw_body bytea[], p_scheme text[], p_signed_at bigint[], p_request_id text[]) RETURNS TABLE(ord integer, outcome text, credit_id bigint, event_row_id bigint, detail text, error_code text, error_message text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $_$
DECLARE
    n           integer := coalesce(array_length(p_raw_body, 1), 0);
    v_body      jsonb;
    v_id        text;
    v_type      text;
    v_facts     payment_fact[];
    f           payment_fact;
    v_seen      text[] := '{}';
    v_twice     text[] := '{}';
    v_keys      text[];
    v_fact      payment_fact[];      -- per element: its one paid fact
    v_risk      risk_fact[];         -- per element: its payer, card, flag
    v_want      boolean;             -- a rule reads them (082)
    v_eid       text[];              -- per element: its event id
    v_types     text[];              -- per element: its event type
    v_fast      boolean[];
    v_ok        boolean[];           -- per element: its deposit qualifies
    v_set       integer[] := '{}';
    v_credit    bigint[];
    v_row       bigint[];
    v_dep_id    bigint[];
    v_dep_st    text[];
    v_map       text;
    v_actor     text;
    v_saved     text;
    v_made      integer;
    r           record;
    i           integer;
    k           text;
BEGIN
    IF n = 0 THEN
        RETURN;
    END IF;

    IF array_length(p_provider, 1) IS DISTINCT FROM n
       OR array_length(p_event_id, 1) IS DISTINCT FROM n
       OR array_length(p_scheme, 1) IS DISTINCT FROM n
       OR array_length(p_signed_at, 1) IS DISTINCT FROM n
       OR array_length(p_request_id, 1) IS DISTINCT FROM n
    THEN
        RAISE EXCEPTION 'ingest_batch(): % bodies, but arrays of other '
                        'lengths', n
            USING ERRCODE = '22023';
    END IF;

    -- the edge answers each webhook after this transaction commits
    PERFORM set_config('synchronous_commit', 'on', true);

    v_fact := array_fill(NULL::payment_fact, ARRAY[n]);
    v_eid := array_fill(NULL::text, ARRAY[n]);
    v_types := array_fill(NULL::text, ARRAY[n]);
    v_fast := array_fill(false, ARRAY[n]);
    v_risk := array_fill(NULL::risk_fact, ARRAY[n]);
    v_want := risk_facts_wanted();

    -- 1. what each element is, read as ingest() reads it, and the keys
    --    it names: its event, and each fact's deposit and payments
    FOR i IN 1 .. n LOOP
        v_keys := '{}';
        v_facts := '{}';
        v_body := NULL;
        v_type := NULL;

        BEGIN
            v_body := convert_from(p_raw_body[i], 'UTF8')::jsonb;
        EXCEPTION
            WHEN invalid_text_representation OR character_not_in_repertoire
                 OR untranslatable_character OR invalid_parameter_value
                 OR statement_too_complex OR program_limit_exceeded
            THEN
                v_body := NULL;
        END;

        IF v_body IS NOT NULL AND jsonb_typeof(v_body) = 'object' THEN
            SELECT coalesce(p_event_id[i], e.event_id), e.event_type
            INTO v_id, v_type
            FROM payload_event(p_provider[i], v_body) e;
            v_facts := ARRAY(SELECT x FROM payload_facts(p_provider[i],
                                                         v_type, v_body) x);
        ELSE
            v_id := p_event_id[i];
        END IF;

        IF v_id IS NOT NULL THEN
            v_keys := v_keys || ('e:' || p_provider[i] || ':' || v_id);
        END IF;
        FOREACH f IN ARRAY v_facts LOOP
            IF f.deposit_ref IS NOT NULL THEN
                v_keys := v_keys || ('d:' || f.deposit_ref);
            END IF;
            IF f.payment_key IS NOT NULL THEN
                v_keys := v_keys || ('p:' || p_provider[i] || ':'
                                     || f.payment_key);
            END IF;
            IF f.original_key IS NOT NULL THEN
                v_keys := v_keys || ('p:' || p_provider[i] || ':'
                                     || f.original_key);
            END IF;
        END LOOP;

        FOREACH k IN ARRAY v_keys LOOP
            IF k = ANY (v_seen) THEN
                v_twice := v_twice || k;
            ELSE
                v_seen := v_seen || k;
            END IF;
        END LOOP;

        -- the simple case: one paid fact, complete, an actor that fits
        -- the map
        f := v_facts[1];
        IF v_id IS NOT NULL AND array_length(v_facts, 1) = 1
           AND f.action = 'paid' AND f.payment_key IS NOT NULL
           AND f.amount_minor IS NOT NULL AND f.currency IS NOT NULL
           AND f.deposit_ref IS NOT NULL
           AND strpos(v_id || f.payment_key || p_provider[i], chr(30)) = 0
           AND strpos(v_id || f.payment_key || p_provider[i], chr(31)) = 0
        THEN
            v_fast[i] := true;
            v_fact[i] := f;
            IF v_want THEN
                v_risk[i] := risk_facts(p_provider[i], v_type, v_body);
            END IF;
            v_eid[i] := v_id;
            v_types[i] := v_type;
        END IF;
    END LOOP;

    -- ... and nothing else in the batch names what it names
    FOR i IN 1 .. n LOOP
        f := v_fact[i];
        IF v_fast[i]
           AND NOT (('e:' || p_provider[i] || ':' || v_eid[i]) = ANY (v_twice)
                    OR ('d:' || f.deposit_ref) = ANY (v_twice)
                    OR ('p:' || p_provider[i] || ':' || f.payment_key)
                       = ANY (v_twice))
        THEN
            v_set := v_set || i;
        ELSE
            v_fast[i] := false;
        END IF;
    END LOOP;

    v_credit := array_fill(NULL::bigint, ARRAY[n]);
    v_row := array_fill(NULL::bigint, ARRAY[n]);
    v_dep_id := array_fill(NULL::bigint, ARRAY[n]);
    v_dep_st := array_fill(NULL::text, ARRAY[n]);

    IF array_length(v_set, 1) > 0 THEN
        BEGIN
            -- 2. their deposits, locked in id order, and read: one
            --    statement for them all (locked as returned, after the
            --    sort; a deposit moved meanwhile is read again, and left
            --    out if it no longer qualifies)
            v_ok := array_fill(false, ARRAY[n]);
            FOR r IN
                SELECT j, d.id AS deposit, d.status AS deposit_status
                FROM unnest(v_set) j
                JOIN deposit d ON d.reference = (v_fact[j]).deposit_ref
                WHERE d.provider = p_provider[j]
                  AND d.amount_minor = (v_fact[j]).amount_minor
                  AND d.currency = (v_fact[j]).currency
                  AND d.status IN ('created', 'pending')
                  AND NOT EXISTS (SELECT 1 FROM mt5_credit c
                                  WHERE c.provider = p_provider[j]
                                    AND c.provider_payment_id
                                        = (v_fact[j]).payment_key)
                  AND NOT EXISTS (SELECT 1 FROM mt5_credit c
                                  WHERE c.deposit_id = d.id
                                    AND c.kind = 'deposit')
                  AND NOT EXISTS (SELECT 1 FROM webhook_event e
                                  WHERE e.provider = p_provider[j]
                                    AND e.provider_event_id = v_eid[j])
                ORDER BY d.id
                FOR UPDATE OF d
            LOOP
                v_ok[r.j] := true;
                v_dep_id[r.j] := r.deposit;
                v_dep_st[r.j] := r.deposit_status;
            END LOOP;

            -- the credits' ids, drawn in the batch's order
            FOREACH i IN ARRAY v_set LOOP
                IF v_ok[i] THEN
                    v_credit[i] := nextval('mt5credit.mt5_credit_id_seq');
                ELSE
                    v_fast[i] := false;
                END IF;
            END LOOP;

            v_set := ARRAY(SELECT j FROM unnest(v_set) j WHERE v_fast[j]);
            v_map := '';
            FOREACH i IN ARRAY v_set LOOP
                v_actor := left('ingest:' || p_provider[i] || ':' || v_eid[i],
                                200);
                v_map := v_map || chr(30) || 'c' || v_credit[i] || chr(31)
                         || v_actor || chr(30) || 'd' || v_dep_id[i]
                         || chr(31) || v_actor || chr(31) || v_credit[i]
                         || chr(31) || (v_fact[i]).payment_key;
            END LOOP;
            v_map := v_map || chr(30);

            -- 3. their events, credits and deposits in one statement
            IF array_length(v_set, 1) > 0 THEN
                v_saved := current_setting('mt5credit.actor', true);
                PERFORM set_config('mt5credit.actor', 'ingest:batch', true);
                PERFORM set_config('mt5credit.actors', v_map, true);

                WITH src AS MATERIALIZED (
                    SELECT j AS el, p_provider[j] AS provider,
                           v_eid[j] AS event_id, v_types[j] AS event_type,
                           p_raw_body[j] AS raw,
                           p_scheme[j] AS scheme, p_signed_at[j] AS signed_at,
                           CASE WHEN p_request_id[j] ~ '^[0-9a-f]{32}$'
                                THEN p_request_id[j] END AS request_id,
                           v_credit[j] AS credit, v_dep_id[j] AS deposit,
                           v_dep_st[j] AS deposit_status,
                           (v_fact[j]).payment_key AS payment,
                           (v_fact[j]).amount_minor AS amount,
                           (v_fact[j]).currency AS currency,
                           (v_risk[j]).payer_name AS payer_name,
                           (v_risk[j]).instrument AS instrument,
                           (v_risk[j]).provider_signal AS provider_signal
                    FROM unnest(v_set) j),
                ev AS (
                    INSERT INTO webhook_event (provider, provider_event_id,
                        event_type, raw_body, body_sha256, signature_scheme,
                        signed_at, disposition, credit_id, request_id)
                    SELECT s.provider, s.event_id, s.event_type, s.raw, sha256(s.raw), s.scheme,
                           to_timestamp(s.signed_at), 'credit_created',
                           s.credit, s.request_id
                    FROM src s
                    ORDER BY s.el
                    RETURNING id, webhook_event.credit_id),
                cr AS (
                    INSERT INTO mt5_credit (id, kind, direction, deposit_id,
                        provider, provider_payment_id, mt5_server, mt5_login,
                        amount_minor, currency, paid_amount_minor,
                        paid_currency, fx_rate, fx_source, fx_at,
                        payer_name, instrument, provider_signal)
                    OVERRIDING SYSTEM VALUE
                    SELECT s.credit, 'deposit', 'credit', d.id, s.provider,
                           s.payment, d.mt5_server, d.mt5_login,
                           d.credit_amount_minor, d.account_currency,
                           s.amount, s.currency, d.fx_rate, d.fx_source,
                           d.fx_at, s.payer_name, s.instrument,
                           s.provider_signal
                    FROM src s JOIN deposit d ON d.id = s.deposit
                    ORDER BY s.el
                    RETURNING mt5_credit.id),
                up AS (
                    UPDATE deposit d
                    SET status = 'succeeded', updated_at = now()
                    FROM src s
                    WHERE d.id = s.deposit AND d.status = s.deposit_status
                    RETURNING d.id)
                SELECT array_agg(ev.id ORDER BY s.el) AS event_rows,
                       (SELECT count(*) FROM cr) AS credits,
                       (SELECT count(*) FROM up) AS deposits
                INTO r
                FROM src s JOIN ev ON ev.credit_id = s.credit;

                PERFORM set_config('mt5credit.actors', '', true);
                PERFORM set_config('mt5credit.actor', coalesce(v_saved, ''),
                                   true);

                v_made := array_length(v_set, 1);
                IF coalesce(array_length(r.event_rows, 1), 0) <> v_made
                   OR r.credits <> v_made OR r.deposits <> v_made
                THEN
                    RAISE EXCEPTION 'ingest_batch(): % events, % credits, '
                                    '% deposits written of %',
                                    coalesce(array_length(r.event_rows, 1), 0),
                                    r.credits, r.deposits, v_made
                        USING ERRCODE = 'MC111';
                END IF;

                FOR j IN 1 .. v_made LOOP
                    v_row[v_set[j]] := r.event_rows[j];
                END LOOP;
            END IF;
        EXCEPTION
            WHEN OTHERS THEN
                -- rolled back: each of them goes through ingest()
                v_set := '{}';
                v_fast := array_fill(false, ARRAY[n]);
        END;
    END IF;

    -- 4. the rest, in order, each alone
    FOR i IN 1 .. n LOOP
        IF v_fast[i] AND i = ANY (v_set) THEN
            ord := i;
            outcome := 'credit_created';
            credit_id := v_credit[i];
            event_row_id := v_row[i];
            detail := NULL;
            error_code := NULL;
            error_message := NULL;
            RETURN NEXT;
            CONTINUE;
        END IF;

        ord := i;
        error_code := NULL;
        error_message := NULL;
        BEGIN
            SELECT x.outcome, x.credit_id, x.event_row_id, x.detail
            INTO outcome, credit_id, event_row_id, detail
            FROM ingest(p_provider[i], p_event_id[i], p_raw_body[i],
                        p_scheme[i], p_signed_at[i], p_request_id[i]) x;
        EXCEPTION
            WHEN OTHERS THEN
                outcome := NULL;
                credit_id := NULL;
                event_row_id := NULL;
                detail := NULL;
                error_code := SQLSTATE;
                error_message := SQLERRM;
        END;
        RETURN NEXT;
    END LOOP;
END
$_$;


ALTER FUNCTION mt5credit.ingest_batch(p_provider text[], p_event_id text[], p_raw_body bytea[], p_scheme text[], p_signed_at bigint[], p_request_id text[]) OWNER TO mt5credit_owner;

--
-- Name: ingest_facts(text, text, jsonb, bigint, text, bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.ingest_facts(p_provider text, p_type text, p_body jsonb, p_event bigint, p_event_id text, p_credit bigint DEFAULT NULL::bigint, OUT disposition text, OUT credit_id bigint, OUT created boolean, OUT detail text) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_facts  payment_fact[];
    f        payment_fact;
    s        ingest_step;
    v_risk   risk_fact;
BEGIN
    disposition := 'ignored';
    created := false;

    -- the provider's own facts first, then its status facts, as before
    v_facts := ARRAY(SELECT x FROM payload_facts(p_provider, p_type,
                                                 p_body) x);

    FOREACH f IN ARRAY v_facts LOOP
        IF f.action = 'ignore' THEN
            detail := f.note;
            CONTINUE;
        END IF;

        IF f.action = 'paid' THEN
            -- what it signed of its payer, for the rules in force (082)
            IF v_risk IS NULL THEN
                v_risk := risk_facts(p_provider, p_type, p_body);
            END IF;
            s := ingest_paid(p_provider, f, p_event, p_credit, v_risk);
            p_credit := NULL;
        ELSIF f.action IN ('pending', 'failed', 'expired') THEN
            s := ingest_status(p_provider, f, p_event, p_event_id);
        ELSIF f.action = 'review' THEN
            s := ingest_review(p_provider, f, p_event);
        ELSE
            s := ingest_reversal(p_provider, f, p_event);
        END IF;

        -- one event may carry several facts (a refund list): the
        -- strongest disposition wins, a case above all
        IF s.disposition = 'case_opened' THEN
            disposition := 'case_opened';
        ELSIF s.disposition = 'credit_created'
              AND disposition <> 'case_opened'
        THEN
            disposition := 'credit_created';
        ELSIF s.disposition = 'already_credited'
              AND disposition = 'ignored'
        THEN
            disposition := 'already_credited';
        ELSIF s.disposition = 'status_recorded'
              AND disposition = 'ignored'
        THEN
            disposition := 'status_recorded';
        END IF;

        IF s.disposition = 'credit_created' THEN
            created := true;
        END IF;

        credit_id := coalesce(credit_id, s.credit_id);
        detail := coalesce(s.detail, detail);
    END LOOP;

    IF disposition = 'case_opened' AND credit_id IS NOT NULL AND created THEN
        -- some facts made credits and some cases: both are recorded
        detail := detail || ' (and credit ' || credit_id || ' created)';
    END IF;
END
$$;


ALTER FUNCTION mt5credit.ingest_facts(p_provider text, p_type text, p_body jsonb, p_event bigint, p_event_id text, p_credit bigint, OUT disposition text, OUT credit_id bigint, OUT created boolean, OUT detail text) OWNER TO mt5credit_owner;

--
-- Name: ingest_malformed(text, bytea, bytea, text, bigint, text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.ingest_malformed(p_provider text, p_raw_body bytea, p_sha bytea, p_scheme text, p_signed_at bigint, p_request_id text, p_reason text) RETURNS TABLE(outcome text, credit_id bigint, event_row_id bigint, detail text)
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    INSERT INTO webhook_malformed (provider, raw_body, body_sha256,
                                   signature_scheme, signed_at, reason,
                                   first_request_id, last_request_id)
    VALUES (p_provider, p_raw_body, p_sha, p_scheme,
            to_timestamp(p_signed_at), left(p_reason, 500), p_request_id,
            p_request_id)
    ON CONFLICT (provider, body_sha256) DO UPDATE
        SET deliveries = webhook_malformed.deliveries + 1,
            last_received_at = now(),
            last_request_id = EXCLUDED.last_request_id;

    RETURN QUERY SELECT 'malformed'::text, NULL::bigint, NULL::bigint,
                        p_reason;
END
$$;


ALTER FUNCTION mt5credit.ingest_malformed(p_provider text, p_raw_body bytea, p_sha bytea, p_scheme text, p_signed_at bigint, p_request_id text, p_reason text) OWNER TO mt5credit_owner;

--
-- Name: ingest_paid(text, mt5credit.payment_fact, bigint, bigint, mt5credit.risk_fact); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.ingest_paid(p_provider text, f mt5credit.payment_fact, p_event bigint, p_credit bigint DEFAULT NULL::bigint, p_risk mt5credit.risk_fact DEFAULT NULL::mt5credit.risk_fact) RETURNS mt5credit.ingest_step
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_dep     deposit;
    v_id      bigint;
    v_other   bigint;
    v_case    bigint;
    v_rows    integer;
    v_saved   text;
BEGIN
    IF f.payment_key IS NULL OR f.amount_minor IS NULL
       OR f.currency IS NULL
    THEN
        v_case := open_case('unusable_event', 'medium',
                            'unusable_event:' || p_event,
                            jsonb_build_object('facts', to_jsonb(f)),
                            NULL, NULL, p_event);
        RETURN ('case_opened', NULL, 'paid event without payment id, '
                'integer amount or currency: case ' || v_case)::ingest_step;
    END IF;

    -- locked as it is read: a payment and a status report of one deposit
    -- are decided one after the other, and its status below is current
    SELECT * INTO v_dep FROM deposit WHERE reference = f.deposit_ref
    FOR UPDATE;

    IF NOT FOUND THEN
        v_case := open_case('unknown_deposit', 'high',
                            'unknown_deposit:' || p_provider || ':'
                                || f.payment_key,
                            jsonb_build_object('facts', to_jsonb(f)),
                            NULL, NULL, p_event);
        RETURN ('case_opened', NULL, 'no deposit '
                || coalesce(f.deposit_ref, '(none)') || ': case '
                || v_case)::ingest_step;
    END IF;

    IF v_dep.provider <> p_provider
       OR v_dep.amount_minor <> f.amount_minor
       OR v_dep.currency <> f.currency
    THEN
        v_case := open_case('amount_mismatch', 'high',
                            'amount_mismatch:' || p_provider || ':'
                                || f.payment_key,
                            jsonb_build_object(
                                'facts', to_jsonb(f),
                                'deposit', jsonb_build_object(
                                    'reference', v_dep.reference,
                                    'provider', v_dep.provider,
                                    'amount_minor', v_dep.amount_minor,
                                    'currency', v_dep.currency)),
                            NULL, v_dep.id, p_event);
        RETURN ('case_opened', NULL, 'paid ' || f.amount_minor || ' '
                || f.currency || ' via ' || p_provider || ', deposit '
                || v_dep.reference || ' expects ' || v_dep.amount_minor
                || ' ' || v_dep.currency || ' via ' || v_dep.provider
                || ': case ' || v_case)::ingest_step;
    END IF;

    INSERT INTO mt5_credit (id, kind, direction, deposit_id, provider,
                            provider_payment_id, mt5_server, mt5_login,
                            amount_minor, currency, paid_amount_minor,
                            paid_currency, fx_rate, fx_source, fx_at,
                            payer_name, instrument, provider_signal)
    OVERRIDING SYSTEM VALUE
    VALUES (coalesce(p_credit, nextval('mt5credit.mt5_credit_id_seq')),
            'deposit', 'credit', v_dep.id, p_provider, f.payment_key,
            v_dep.mt5_server, v_dep.mt5_login, v_dep.credit_amount_minor,
            v_dep.account_currency, f.amount_minor, f.currency,
            v_dep.fx_rate, v_dep.fx_source, v_dep.fx_at,
            p_risk.payer_name, p_risk.instrument, p_risk.provider_signal)
    ON CONFLICT DO NOTHING
    RETURNING id INTO v_id;

    IF v_id IS NOT NULL THEN
        -- the deposit is paid: forward from created or pending, under the
        -- lock held; from anywhere else deposit_observe() decides (already
        -- succeeded: unchanged; failed or closed: a conflict and its case)
        IF v_dep.status IN ('created', 'pending') THEN
            -- the history row's detail, as deposit_observe() writes it;
            -- the caller's own is put back after
            v_saved := current_setting('mt5credit.detail', true);
            PERFORM set_config('mt5credit.detail',
                jsonb_build_object('credit', v_id,
                                   'payment', f.payment_key,
                                   'source', 'credit:' || v_id)::text, true);
            UPDATE deposit SET status = 'succeeded', updated_at = now()
            WHERE id = v_dep.id AND status = v_dep.status;
            GET DIAGNOSTICS v_rows = ROW_COUNT;
            PERFORM set_config('mt5credit.detail', coalesce(v_saved, ''),
                               true);
            IF v_rows <> 1 THEN
                RAISE EXCEPTION 'deposit % moved under a lock', v_dep.id
                    USING ERRCODE = 'MC053';
            END IF;
        ELSE
            PERFORM deposit_observe(v_dep.id, 'succeeded', 'credit:' || v_id,
                                    jsonb_build_object('credit', v_id,
                                        'payment', f.payment_key));
        END IF;

        RETURN ('credit_created', v_id, NULL)::ingest_step;
    END IF;

    -- which key held: this payment, or another payment of the deposit?
    SELECT id, deposit_id INTO v_id, v_other
    FROM mt5_credit
    WHERE provider = p_provider AND provider_payment_id = f.payment_key;

    IF FOUND AND v_other = v_dep.id THEN
        RETURN ('already_credited', v_id, NULL)::ingest_step;
    END IF;

    IF FOUND THEN
        -- one payment claimed for two deposits: credited once, and a
        -- person must see that the provider says otherwise
        v_case := open_case('payment_deposit_mismatch', 'high',
                            'payment_deposit_mismatch:' || p_provider || ':'
                                || f.payment_key,
                            jsonb_build_object('facts', to_jsonb(f),
                                               'credited_deposit', v_other),
                            v_id, v_dep.id, p_event);
        RETURN ('case_opened', NULL, 'payment ' || f.payment_key
                || ' was credited to another deposit: case '
                || v_case)::ingest_step;
    END IF;

    SELECT id INTO v_id FROM mt5_credit
    WHERE deposit_id = v_dep.id AND kind = 'deposit';

    v_case := open_case('second_payment_for_deposit', 'high',
                        'second_payment:' || p_provider || ':'
                            || f.payment_key,
                        jsonb_build_object('facts', to_jsonb(f),
                                           'credited_by', v_id),
                        v_id, v_dep.id, p_event);
    RETURN ('case_opened', NULL, 'deposit ' || v_dep.reference
            || ' was already credited by another payment: case '
            || v_case)::ingest_step;
END
$$;


ALTER FUNCTION mt5credit.ingest_paid(p_provider text, f mt5credit.payment_fact, p_event bigint, p_credit bigint, p_risk mt5credit.risk_fact) OWNER TO mt5credit_owner;

--
-- Name: ingest_payout_status(text, mt5credit.payment_fact, bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.ingest_payout_status(p_provider text, f mt5credit.payment_fact, p_event bigint) RETURNS mt5credit.ingest_step
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    p  payout;
BEGIN
    SELECT * INTO p FROM payout
    WHERE provider = p_provider
      AND (provider_payout_id = f.payment_key OR reference = f.deposit_ref)
    ORDER BY provider_payout_id = f.payment_key DESC NULLS LAST
    LIMIT 1
    FOR UPDATE;

    IF NOT FOUND THEN
        RETURN ('ignored', NULL, 'payout ' || coalesce(f.payment_key, '?')
                || ' (' || coalesce(f.deposit_ref, '?') || ') is no payout '
                || 'of ours')::ingest_step;
    END IF;

    IF p.status IN ('accepted', 'paid') THEN
        UPDATE payout SET next_check_at = clock_timestamp()
        WHERE id = p.id;
    END IF;

    RETURN ('ignored', NULL, 'payout ' || coalesce(f.payment_key, '?')
            || ' is ' || p.reference || ', ' || coalesce(f.note, '?')
            || ' at the provider, ' || p.status || ' here: the sender '
            || 'asks the provider')::ingest_step;
END
$$;


ALTER FUNCTION mt5credit.ingest_payout_status(p_provider text, f mt5credit.payment_fact, p_event bigint) OWNER TO mt5credit_owner;

--
-- Name: ingest_reversal(text, mt5credit.payment_fact, bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.ingest_reversal(p_provider text, f mt5credit.payment_fact, p_event bigint) RETURNS mt5credit.ingest_step
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_orig       mt5_credit;
    v_id         bigint;
    v_case       bigint;
    v_kind       text;
    v_dir        text;
    v_amount     bigint := f.amount_minor;
    v_refunded   bigint;
    v_net_out    bigint;
    v_legs       bigint;
    v_account    bigint;
    v_facts      jsonb := to_jsonb(f);
BEGIN
    IF f.action = 'withdrawal_refund' THEN
        RETURN ingest_withdrawal_refund(p_provider, f, p_event);
    ELSIF f.action = 'payout_status' THEN
        RETURN ingest_payout_status(p_provider, f, p_event);
    END IF;

    IF f.payment_key IS NULL OR f.original_key IS NULL
       OR f.amount_minor IS NULL OR f.amount_minor <= 0
       OR f.currency IS NULL
    THEN
        v_case := open_case('unusable_event', 'medium',
                            'unusable_event:' || p_event,
                            jsonb_build_object('facts', v_facts),
                            NULL, NULL, p_event);
        RETURN ('case_opened', NULL, f.action || ' event without keys, '
                'integer amount or currency: case ' || v_case)::ingest_step;
    END IF;

    SELECT * INTO v_orig FROM mt5_credit
    WHERE provider = p_provider AND provider_payment_id = f.original_key
      AND kind = 'deposit'
    FOR UPDATE;

    IF NOT FOUND THEN
        v_case := open_case(f.action || '_without_credit', 'high',
                            'reversal_without_credit:' || p_provider || ':'
                                || f.payment_key,
                            jsonb_build_object('facts', v_facts),
                            NULL, NULL, p_event);
        RETURN ('case_opened', NULL, f.action || ' of ' || f.original_key
                || ', which has no credit: case ' || v_case)::ingest_step;
    END IF;

    -- a listed refund whose id is a leg's: ours, already out of MT5
    IF f.action = 'refund' THEN
        SELECT reference INTO v_kind FROM withdrawal_refund
        WHERE provider = p_provider AND provider_refund_id = f.payment_key;
        IF FOUND THEN
            RETURN ('ignored', NULL, 'refund ' || f.payment_key || ' is leg '
                    || v_kind || ' of a withdrawal: never debited'
                   )::ingest_step;
        END IF;
    END IF;

    -- already recorded under this key (a re-delivery by another event)?
    SELECT id INTO v_id FROM mt5_credit
    WHERE provider = p_provider AND provider_payment_id = f.payment_key;

    IF FOUND THEN
        RETURN ('already_credited', v_id, NULL)::ingest_step;
    END IF;

    IF f.currency <> v_orig.paid_currency THEN
        v_case := open_case('amount_mismatch', 'high',
                            'amount_mismatch:' || p_provider || ':'
                                || f.payment_key,
                            jsonb_build_object('facts', v_facts,
                                'original_currency', v_orig.paid_currency),
                            v_orig.id, v_orig.deposit_id, p_event);
        RETURN ('case_opened', NULL, f.action || ' in ' || f.currency
                || ', payment was in ' || v_orig.paid_currency
                || ': case ' || v_case)::ingest_step;
    END IF;

    -- what already went back, in the paid currency
    SELECT coalesce(sum(paid_amount_minor)
                    FILTER (WHERE kind = 'refund'), 0),
           coalesce(sum(CASE direction WHEN 'debit' THEN paid_amount_minor
                                       ELSE -paid_amount_minor END), 0)
    INTO v_refunded, v_net_out
    FROM mt5_credit
    WHERE original_credit_id = v_orig.id;

    -- and what our legs may have refunded on it: sent, not failed (a leg
    -- in flight counts: the provider may have it before we know)
    SELECT coalesce(sum(amount_minor), 0) INTO v_legs
    FROM withdrawal_refund
    WHERE credit_id = v_orig.id
      AND status IN ('sending', 'unknown', 'accepted', 'succeeded');

    IF f.action = 'refund_total' THEN
        -- Stripe's cumulative amount_refunded: debit only the increase
        -- that is not ours
        v_amount := f.amount_minor - v_refunded - v_legs;

        IF v_amount <= 0 THEN
            RETURN ('ignored', NULL, 'cumulative refund ' || f.amount_minor
                    || ' already debited'
                    || CASE WHEN v_legs > 0
                            THEN ' or refunded by withdrawals'' legs ('
                                 || v_legs || ')' ELSE '' END)::ingest_step;
        END IF;
    END IF;

    IF f.action = 'chargeback_reversal' THEN
        IF NOT EXISTS (SELECT 1 FROM mt5_credit
                       WHERE original_credit_id = v_orig.id
                         AND kind = 'chargeback' AND direction = 'debit')
           OR v_amount > v_net_out
        THEN
            v_case := open_case('chargeback_reversal_without_debit', 'high',
                                'reversal_without_debit:' || p_provider
                                    || ':' || f.payment_key,
                                jsonb_build_object('facts', v_facts),
                                v_orig.id, v_orig.deposit_id, p_event);
            RETURN ('case_opened', NULL, 'reinstatement without a matching '
                    'chargeback debit: case ' || v_case)::ingest_step;
        END IF;

    ELSIF v_net_out + v_legs + v_amount > v_orig.paid_amount_minor THEN
        v_case := open_case('reversal_exceeds_payment', 'high',
                            'reversal_exceeds:' || p_provider || ':'
                                || f.payment_key,
                            jsonb_build_object('facts', v_facts,
                                'paid_amount_minor', v_orig.paid_amount_minor,
                                'already_reversed_minor', v_net_out,
                                'withdrawal_legs_minor', v_legs),
                            v_orig.id, v_orig.deposit_id, p_event);
        RETURN ('case_opened', NULL, f.action || ' of ' || v_amount
                || ' would take back more than was paid: case '
                || v_case)::ingest_step;
    END IF;

    -- pro rata on the cumulative net amount taken back (refunds and
    -- chargebacks, less reinstatements), so rounding never drifts: the
    -- account has always lost round(credited * net / paid), and once all
    -- was taken back, by refunds, chargebacks or both, exactly the
    -- credited amount has gone back
    IF f.action = 'chargeback_reversal' THEN
        v_account := round(v_orig.amount_minor::numeric * v_net_out
                           / v_orig.paid_amount_minor)
                     - round(v_orig.amount_minor::numeric
                             * (v_net_out - v_amount)
                             / v_orig.paid_amount_minor);
    ELSE
        v_account := round(v_orig.amount_minor::numeric
                           * (v_net_out + v_amount)
                           / v_orig.paid_amount_minor)
                     - round(v_orig.amount_minor::numeric * v_net_out
                             / v_orig.paid_amount_minor);
    END IF;

    IF v_account <= 0 THEN
        v_case := open_case('unusable_event', 'medium',
                            'unusable_event:' || p_event,
                            jsonb_build_object('facts', v_facts,
                                'converted_minor', v_account),
                            v_orig.id, v_orig.deposit_id, p_event);
        RETURN ('case_opened', NULL, 'converted amount is zero: case '
                || v_case)::ingest_step;
    END IF;

    v_kind := CASE WHEN f.action IN ('refund', 'refund_total') THEN 'refund'
                   ELSE 'chargeback' END;
    v_dir := CASE WHEN f.action = 'chargeback_reversal' THEN 'credit'
                  ELSE 'debit' END;

    INSERT INTO mt5_credit (kind, direction, original_credit_id, deposit_id,
                            provider, provider_payment_id, mt5_server,
                            mt5_login, amount_minor, currency,
                            paid_amount_minor, paid_currency, fx_rate,
                            fx_source, fx_at)
    VALUES (v_kind, v_dir, v_orig.id, v_orig.deposit_id, p_provider,
            f.payment_key, v_orig.mt5_server, v_orig.mt5_login, v_account,
            v_orig.currency, v_amount, v_orig.paid_currency, v_orig.fx_rate,
            v_orig.fx_source, v_orig.fx_at)
    RETURNING id INTO v_id;

    RETURN ('credit_created', v_id, NULL)::ingest_step;
END
$$;


ALTER FUNCTION mt5credit.ingest_reversal(p_provider text, f mt5credit.payment_fact, p_event bigint) OWNER TO mt5credit_owner;

--
-- Name: ingest_review(text, mt5credit.payment_fact, bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.ingest_review(p_provider text, f mt5credit.payment_fact, p_event bigint) RETURNS mt5credit.ingest_step
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_dep   deposit;
    v_case  bigint;
BEGIN
    SELECT * INTO v_dep FROM deposit
    WHERE reference = f.deposit_ref AND provider = p_provider;

    v_case := open_case('provider_payment_review', 'high',
                        'provider_payment_review:' || p_provider || ':'
                            || coalesce(f.payment_key, 'event ' || p_event)
                            || ':' || f.note,
                        jsonb_build_object('facts', to_jsonb(f)),
                        NULL, v_dep.id, p_event,
                        CASE WHEN f.currency IS NOT NULL
                             THEN f.amount_minor END,
                        f.currency);

    RETURN ('case_opened', NULL, f.note || ': case ' || v_case)::ingest_step;
END
$$;


ALTER FUNCTION mt5credit.ingest_review(p_provider text, f mt5credit.payment_fact, p_event bigint) OWNER TO mt5credit_owner;

--
-- Name: ingest_status(text, mt5credit.payment_fact, bigint, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.ingest_status(p_provider text, f mt5credit.payment_fact, p_event bigint, p_event_id text) RETURNS mt5credit.ingest_step
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_dep      deposit;
    v_status   text := CASE f.action WHEN 'expired' THEN 'closed'
                                     ELSE f.action END;
    v_outcome  text;
BEGIN
    IF f.deposit_ref IS NOT NULL THEN
        SELECT * INTO v_dep FROM deposit WHERE reference = f.deposit_ref;
    ELSIF f.payment_key IS NOT NULL THEN
        SELECT d.* INTO v_dep FROM deposit d
        JOIN mt5_credit c ON c.deposit_id = d.id AND c.kind = 'deposit'
        WHERE c.provider = p_provider
          AND c.provider_payment_id = f.payment_key;
    END IF;

    IF v_dep.id IS NULL OR v_dep.provider <> p_provider THEN
        RETURN ('ignored', NULL, f.note || ': no deposit of ours to move'
                )::ingest_step;
    END IF;

    v_outcome := deposit_observe(v_dep.id, v_status,
        'webhook:' || p_provider || ':' || p_event_id,
        jsonb_build_object('event', p_event, 'type', f.note));

    IF v_outcome = 'conflict' THEN
        RETURN ('case_opened', NULL, 'deposit ' || v_dep.reference || ' is '
                || v_dep.status || '; ' || f.note || ' says ' || v_status
                || ': recorded as a conflict, not applied')::ingest_step;
    END IF;

    RETURN ('status_recorded', NULL, 'deposit ' || v_dep.reference || ': '
            || v_status || ' (' || v_outcome || ')')::ingest_step;
END
$$;


ALTER FUNCTION mt5credit.ingest_status(p_provider text, f mt5credit.payment_fact, p_event bigint, p_event_id text) OWNER TO mt5credit_owner;

--
-- Name: ingest_withdrawal_refund(text, mt5credit.payment_fact, bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.ingest_withdrawal_refund(p_provider text, f mt5credit.payment_fact, p_event bigint) RETURNS mt5credit.ingest_step
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    r      withdrawal_refund;
    v_tag  text := split_part(f.note, ' ', 2);
    v_case bigint;
BEGIN
    SELECT * INTO r FROM withdrawal_refund
    WHERE provider = p_provider
      AND (provider_refund_id = f.payment_key
           OR (reference = f.deposit_ref
               AND deployment_tag IS NOT DISTINCT FROM
                   nullif(v_tag, '-')))
    ORDER BY provider_refund_id = f.payment_key DESC NULLS LAST
    LIMIT 1
    FOR UPDATE;

    IF NOT FOUND THEN
        IF v_tag IS DISTINCT FROM coalesce((SELECT tag FROM deployment), '-')
        THEN
            RETURN ('ignored', NULL, 'refund ' || coalesce(f.payment_key, '?')
                    || ' was made by another deployment (' || v_tag
                    || '): not ours, never debited')::ingest_step;
        END IF;
        v_case := open_case('refund_leg_unknown', 'high',
                            'refund_leg_unknown:' || p_provider || ':'
                                || coalesce(f.payment_key, p_event::text),
                            jsonb_build_object('facts', to_jsonb(f)),
                            NULL, NULL, p_event, f.amount_minor,
                            f.currency);
        RETURN ('case_opened', NULL, 'refund ' || coalesce(f.payment_key, '?')
                || ' carries our withdrawal metadata ('
                || coalesce(f.deposit_ref, '?') || ') but no leg here has '
                || 'it: never debited; case ' || v_case)::ingest_step;
    END IF;

    IF r.status IN ('accepted', 'succeeded') THEN
        UPDATE withdrawal_refund SET next_check_at = clock_timestamp()
        WHERE id = r.id;
    END IF;

    RETURN ('ignored', NULL, 'refund ' || coalesce(f.payment_key, '?')
            || ' is leg ' || r.reference || ' of a withdrawal ('
            || split_part(f.note, ' ', 1) || ' at the provider, ' || r.status
            || ' here): never debited')::ingest_step;
END
$$;


ALTER FUNCTION mt5credit.ingest_withdrawal_refund(p_provider text, f mt5credit.payment_fact, p_event bigint) OWNER TO mt5credit_owner;

--
-- Name: journal_append(text, text, bigint, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.journal_append(p_chain text, p_source text, p_source_id bigint, p_entry jsonb) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_seq   integer;
    v_prev  bytea;
BEGIN
    PERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended(
                'mt5credit.journal:' || p_chain, 0));
    SELECT j.seq, j.hash INTO v_seq, v_prev
    FROM mt5credit.journal j WHERE j.chain = p_chain COLLATE "C"
    ORDER BY j.seq DESC LIMIT 1;

    v_seq := coalesce(v_seq, 0) + 1;
    v_prev := coalesce(v_prev, '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea);

    INSERT INTO mt5credit.journal (chain, seq, source, source_id, entry,
                                   prev_hash, hash)
    VALUES (p_chain, v_seq, p_source, p_source_id, p_entry, v_prev,
            pg_catalog.sha256(v_prev || pg_catalog.convert_to(
                p_chain || E'\n' || v_seq || E'\n' || p_entry::text,
                'UTF8')));
END
$$;


ALTER FUNCTION mt5credit.journal_append(p_chain text, p_source text, p_source_id bigint, p_entry jsonb) OWNER TO mt5credit_owner;

--
-- Name: webhook_event; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.webhook_event (
    id bigint NOT NULL,
    provider text NOT NULL,
    provider_event_id text NOT NULL,
    event_type text,
    raw_body bytea NOT NULL,
    body_sha256 bytea NOT NULL,
    signature_scheme text NOT NULL,
    signed_at timestamp with time zone,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    disposition text NOT NULL,
    credit_id bigint,
    detail text,
    request_id mt5credit.request_id,
    body_redacted_at timestamp with time zone,
    CONSTRAINT webhook_event_body_sha256_check CHECK ((length(body_sha256) = 32)),
    CONSTRAINT webhook_event_check CHECK (((disposition <> ALL (ARRAY['credit_created'::text, 'already_credited'::text])) OR (credit_id IS NOT NULL))),
    CONSTRAINT webhook_event_disposition_check CHECK ((disposition = ANY (ARRAY['credit_created'::text, 'already_credited'::text, 'ignored'::text, 'case_opened'::text, 'status_recorded'::text]))),
    CONSTRAINT webhook_event_event_type_check CHECK (((length(event_type) >= 1) AND (length(event_type) <= 255))),
    CONSTRAINT webhook_event_provider_check CHECK ((provider ~ '^[a-z][a-z0-9_-]{0,31}$'::text)),
    CONSTRAINT webhook_event_provider_event_id_check CHECK (((length(provider_event_id) >= 1) AND (length(provider_event_id) <= 255))),
    CONSTRAINT webhook_event_redacted_empty CHECK (((body_redacted_at IS NULL) OR (raw_body = '\x'::bytea))),
    CONSTRAINT webhook_event_signature_scheme_check CHECK ((signature_scheme = ANY (ARRAY['stripe'::text, 'standard'::text, 'hmac-sha256'::text, 'api'::text, 'adyen'::text])))
);


ALTER TABLE mt5credit.webhook_event OWNER TO mt5credit_owner;

--
-- Name: TABLE webhook_event; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.webhook_event IS 'Signed provider events, raw bytes as received, unique per provider event id; append-only.';


--
-- Name: COLUMN webhook_event.body_redacted_at; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.webhook_event.body_redacted_at IS 'When its body was removed under the retention policy (070); its digest stays';


--
-- Name: journal_event_fact(mt5credit.webhook_event); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.journal_event_fact(e mt5credit.webhook_event) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
    SELECT jsonb_build_object(
               'id', e.id, 'provider', e.provider,
               'provider_event_id', e.provider_event_id,
               'event_type', e.event_type, 'body_sha256', e.body_sha256,
               'signature_scheme', e.signature_scheme,
               'signed_at', e.signed_at, 'received_at', e.received_at,
               'disposition', e.disposition, 'credit_id', e.credit_id,
               'detail', e.detail, 'request_id', e.request_id)
$$;


ALTER FUNCTION mt5credit.journal_event_fact(e mt5credit.webhook_event) OWNER TO mt5credit_owner;

--
-- Name: journal_record(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.journal_record() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_entry  jsonb;
    v_chain  text;
    v_seq    integer;
    v_prev   bytea;
BEGIN
    IF TG_OP = 'UPDATE' AND NEW IS NOT DISTINCT FROM OLD THEN
        RETURN NULL;
    END IF;
    IF TG_TABLE_NAME = 'webhook_event' THEN
        v_entry := journal_event_fact(NEW);
        IF TG_OP = 'UPDATE' AND v_entry = journal_event_fact(OLD) THEN
            RETURN NULL;   -- nothing of the fact changed (a body redacted)
        END IF;
    ELSE
        v_entry := to_jsonb(NEW);
    END IF;
    v_chain := TG_ARGV[1] || ':' || (v_entry->>TG_ARGV[0]);

    IF (TG_OP = 'INSERT' AND TG_ARGV[0] = 'id')
       OR coalesce(v_entry->>'from_status', '-') = TG_ARGV[3]
    THEN
        -- a new row's own chain, or a history's first row: entry 1 (a
        -- second is refused)
        v_seq := 1;
        v_prev := '\x0000000000000000000000000000000000000000000000000000000000000000';
    ELSE
        IF TG_ARGV[0] <> 'id' AND TG_ARGV[2] IS DISTINCT FROM 'locked' THEN
            -- no row lock orders this chain's writers: they take turns
            PERFORM pg_advisory_xact_lock(hashtextextended(
                        'mt5credit.journal:' || v_chain, 0));
        END IF;
        SELECT j.seq, j.hash INTO v_seq, v_prev
        FROM journal j WHERE j.chain = v_chain COLLATE "C"
        ORDER BY j.seq DESC LIMIT 1;
        v_seq := coalesce(v_seq, 0) + 1;
        v_prev := coalesce(v_prev, '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea);
    END IF;

    INSERT INTO journal (chain, seq, source, source_id, entry, prev_hash,
                         hash)
    VALUES (v_chain, v_seq, TG_TABLE_NAME, (v_entry->>'id')::bigint,
            v_entry, v_prev,
            sha256(v_prev || convert_to(v_chain || E'\n' || v_seq || E'\n'
                                        || v_entry::text, 'UTF8')));
    RETURN NULL;
END
$$;


ALTER FUNCTION mt5credit.journal_record() OWNER TO mt5credit_owner;

--
-- Name: journal_record_events(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.journal_record_events() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_first  bigint;
    v_facts  jsonb;
    v_chain  text;
    v_entry  jsonb;
    v_zero   bytea := '\x0000000000000000000000000000000000000000000000000000000000000000';
BEGIN
    SELECT min(n.id), jsonb_agg(journal_event_fact(n::webhook_event)
                                ORDER BY n.id)
    INTO v_first, v_facts
    FROM new_events n;

    IF v_first IS NULL THEN
        RETURN NULL;
    END IF;

    v_chain := 'events:' || v_first;
    v_entry := jsonb_build_object('id', v_first, 'webhook_event', v_facts);
    INSERT INTO journal (chain, seq, source, source_id, entry, prev_hash,
                         hash)
    VALUES (v_chain, 1, 'webhook_event', v_first, v_entry, v_zero,
            sha256(v_zero || convert_to(v_chain || E'\n1\n'
                                        || v_entry::text, 'UTF8')));
    RETURN NULL;
END
$$;


ALTER FUNCTION mt5credit.journal_record_events() OWNER TO mt5credit_owner;

--
-- Name: journal_record_ingest(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.journal_record_ingest() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_first     bigint;
    v_ids       bigint[];
    v_deposits  bigint[];
    v_credits   jsonb;
    v_moves     jsonb;
    v_chain     text;
    v_entry     jsonb;
    v_zero      bytea := '\x0000000000000000000000000000000000000000000000000000000000000000';
BEGIN
    -- as arrays, each history read through its index: a transition table
    -- has no statistics, and a join with it cost this trigger ten times
    -- as much (docs/testing.md)
    SELECT min(n.id), array_agg(n.id), array_agg(n.deposit_id)
    INTO v_first, v_ids, v_deposits
    FROM new_credits n;
    IF v_first IS NULL THEN
        RETURN NULL;
    END IF;

    SELECT jsonb_agg(to_jsonb(h) ORDER BY h.id) INTO v_credits
    FROM credit_history h
    WHERE h.credit_id = ANY (v_ids);

    SELECT jsonb_agg(to_jsonb(h) ORDER BY h.id) INTO v_moves
    FROM deposit_history h
    WHERE h.deposit_id = ANY (v_deposits)
      AND h.to_status = 'succeeded';

    v_chain := 'ingest:' || v_first;
    v_entry := jsonb_build_object('id', v_first,
                                  'credit_history',
                                  coalesce(v_credits, '[]'),
                                  'deposit_history',
                                  coalesce(v_moves, '[]'));
    INSERT INTO journal (chain, seq, source, source_id, entry, prev_hash,
                         hash)
    VALUES (v_chain, 1, 'mt5_credit', v_first, v_entry, v_zero,
            sha256(v_zero || convert_to(v_chain || E'\n1\n'
                                        || v_entry::text, 'UTF8')));
    RETURN NULL;
END
$$;


ALTER FUNCTION mt5credit.journal_record_ingest() OWNER TO mt5credit_owner;

--
-- Name: json_decimal_minor(jsonb, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.json_decimal_minor(p jsonb, p_currency text) RETURNS bigint
    LANGUAGE sql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $_$
    SELECT CASE WHEN scale(m) = 0 AND m < 1e18 THEN m::bigint END
    FROM (SELECT CASE WHEN jsonb_typeof(p) IN ('string', 'number')
                       AND (p #>> '{}') ~ '^[0-9]{1,15}(\.[0-9]{1,18})?$'
                      THEN major_to_minor((p #>> '{}')::numeric, p_currency)
                 END AS m) x
$_$;


ALTER FUNCTION mt5credit.json_decimal_minor(p jsonb, p_currency text) OWNER TO mt5credit_owner;

--
-- Name: json_minor(jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.json_minor(p jsonb) RETURNS bigint
    LANGUAGE sql IMMUTABLE
    AS $_$
    SELECT CASE
           WHEN jsonb_typeof(p) = 'number' AND p::text ~ '^[0-9]{1,18}$'
               THEN p::text::bigint
           WHEN jsonb_typeof(p) = 'string' AND (p #>> '{}') ~ '^[0-9]{1,18}$'
               THEN (p #>> '{}')::bigint
           END
$_$;


ALTER FUNCTION mt5credit.json_minor(p jsonb) OWNER TO mt5credit_owner;

--
-- Name: json_text(jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.json_text(p jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT CASE WHEN jsonb_typeof(p) = 'string'
                 AND length(p #>> '{}') BETWEEN 1 AND 255
           THEN p #>> '{}' END
$$;


ALTER FUNCTION mt5credit.json_text(p jsonb) OWNER TO mt5credit_owner;

--
-- Name: major_to_minor(numeric, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.major_to_minor(p_amount numeric, p_currency text) RETURNS numeric
    LANGUAGE sql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT trim_scale(p_amount * (10::numeric ^ c.minor_digits))
    FROM currency c WHERE c.code = p_currency
$$;


ALTER FUNCTION mt5credit.major_to_minor(p_amount numeric, p_currency text) OWNER TO mt5credit_owner;

--
-- Name: money_proposal_guard(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.money_proposal_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF (NEW.case_id, NEW.action, NEW.credit_id, NEW.withdrawal_id,
        NEW.amount_minor, NEW.currency, NEW.note, NEW.evidence,
        NEW.proposed_by, NEW.proposed_at, NEW.deal_ticket)
       IS DISTINCT FROM
       (OLD.case_id, OLD.action, OLD.credit_id, OLD.withdrawal_id,
        OLD.amount_minor, OLD.currency, OLD.note, OLD.evidence,
        OLD.proposed_by, OLD.proposed_at, OLD.deal_ticket)
    THEN
        RAISE EXCEPTION 'proposal % cannot change after it was made: '
                        'withdraw it and propose again', OLD.id
            USING ERRCODE = 'MC040';
    END IF;
    IF OLD.status <> 'proposed' THEN
        RAISE EXCEPTION 'proposal % was already %', OLD.id, OLD.status
            USING ERRCODE = 'MC041';
    END IF;
    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.money_proposal_guard() OWNER TO mt5credit_owner;

--
-- Name: mt5_comment(text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.mt5_comment(p_tag text, p_reference text) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT coalesce(p_tag || ':', '') || p_reference
$$;


ALTER FUNCTION mt5credit.mt5_comment(p_tag text, p_reference text) OWNER TO mt5credit_owner;

--
-- Name: name_words(text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.name_words(p_name text) RETURNS text[]
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT coalesce(array_agg(DISTINCT w ORDER BY w), '{}')
    FROM regexp_split_to_table(
             regexp_replace(normalize(lower(p_name), NFKD),
                            '[\u0300-\u036f]', '', 'g'),
             '[^[:alpha:]]+') w
    WHERE w <> ''
$$;


ALTER FUNCTION mt5credit.name_words(p_name text) OWNER TO mt5credit_owner;

--
-- Name: names_match(text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.names_match(p_a text, p_b text) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT a = b
           OR (cardinality(a) >= 2 AND a <@ b)
           OR (cardinality(b) >= 2 AND b <@ a)
    FROM (SELECT mt5credit.name_words(p_a) AS a,
                 mt5credit.name_words(p_b) AS b) n
$$;


ALTER FUNCTION mt5credit.names_match(p_a text, p_b text) OWNER TO mt5credit_owner;

--
-- Name: open_case(text, text, text, jsonb, bigint, bigint, bigint, bigint, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.open_case(p_kind text, p_severity text, p_dedupe_key text, p_details jsonb, p_credit_id bigint DEFAULT NULL::bigint, p_deposit_id bigint DEFAULT NULL::bigint, p_webhook_event_id bigint DEFAULT NULL::bigint, p_amount_minor bigint DEFAULT NULL::bigint, p_currency text DEFAULT NULL::text) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_id      bigint;
    v_amount  bigint := abs(p_amount_minor);
    v_cur     text := CASE WHEN p_amount_minor IS NOT NULL
                           THEN p_currency END;
BEGIN
    IF v_amount IS NULL AND p_credit_id IS NOT NULL THEN
        SELECT amount_minor, currency INTO v_amount, v_cur
        FROM mt5_credit WHERE id = p_credit_id;
    END IF;

    INSERT INTO "case" (kind, severity, dedupe_key, details, credit_id,
                        deposit_id, webhook_event_id, opened_by,
                        amount_minor, currency)
    VALUES (p_kind, p_severity, p_dedupe_key,
            p_details || jsonb_build_object('sightings', 1),
            p_credit_id, p_deposit_id, p_webhook_event_id, credit_actor(),
            CASE WHEN v_cur IS NOT NULL THEN v_amount END, v_cur)
    ON CONFLICT (dedupe_key) DO UPDATE
        SET details = "case".details || EXCLUDED.details
                      || jsonb_build_object('sightings',
                             coalesce(("case".details->>'sightings')::int, 1)
                             + 1)
    RETURNING id INTO v_id;
    RETURN v_id;
END
$$;


ALTER FUNCTION mt5credit.open_case(p_kind text, p_severity text, p_dedupe_key text, p_details jsonb, p_credit_id bigint, p_deposit_id bigint, p_webhook_event_id bigint, p_amount_minor bigint, p_currency text) OWNER TO mt5credit_owner;

--
-- Name: outbound_append_only(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.outbound_append_only() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    RAISE EXCEPTION '% is append-only', TG_TABLE_NAME
        USING ERRCODE = 'MC160';
END
$$;


ALTER FUNCTION mt5credit.outbound_append_only() OWNER TO mt5credit_owner;

--
-- Name: outbound_backlog(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.outbound_backlog() RETURNS TABLE(endpoint text, disabled boolean, status text, deliveries bigint, oldest_seconds double precision)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT e.name, e.disabled_at IS NOT NULL, s.status,
           (SELECT count(*) FROM outbound_delivery d
            WHERE d.endpoint = e.name AND d.status = s.status),
           coalesce((SELECT extract(epoch FROM clock_timestamp()
                                    - min(m.created_at))
                     FROM outbound_delivery d
                     JOIN outbound_message m ON m.id = d.message_id
                     WHERE d.endpoint = e.name AND d.status = s.status), 0)
    FROM outbound_endpoint e
    CROSS JOIN (VALUES ('pending'), ('sending'), ('exhausted')) s (status)
    WHERE e.retired_at IS NULL
    ORDER BY 1, 3
$$;


ALTER FUNCTION mt5credit.outbound_backlog() OWNER TO mt5credit_owner;

--
-- Name: outbound_claim(text, text[], integer, integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.outbound_claim(p_sender text, p_endpoints text[], p_lease_seconds integer, p_limit integer) RETURNS TABLE(message_id bigint, endpoint text, webhook_id text, attempt integer, type text, subject text, seq integer, body text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    IF p_lease_seconds < 1 OR p_limit < 1 THEN
        RAISE EXCEPTION 'a lease of at least a second, at least one '
                        'delivery' USING ERRCODE = 'MC161';
    END IF;

    RETURN QUERY
    WITH due AS (
        -- the enabled ones first: a disabled endpoint's backlog, however
        -- long, is never walked
        SELECT d.message_id, d.endpoint
        FROM outbound_delivery d
        WHERE d.status = 'pending'
          AND d.next_at <= clock_timestamp()
          AND d.endpoint = ANY (ARRAY(
                  SELECT e.name FROM outbound_endpoint e
                  WHERE e.name = ANY (p_endpoints)
                    AND e.disabled_at IS NULL))
        ORDER BY d.next_at, d.message_id
        LIMIT p_limit
        FOR UPDATE OF d SKIP LOCKED
    ), claimed AS (
        UPDATE outbound_delivery d
        SET status = 'sending', attempts = d.attempts + 1,
            claimed_by = p_sender,
            lease_expires_at = clock_timestamp()
                               + p_lease_seconds * interval '1 second'
        FROM due
        WHERE d.message_id = due.message_id AND d.endpoint = due.endpoint
        RETURNING d.message_id, d.endpoint, d.attempts
    )
    SELECT c.message_id, c.endpoint, m.webhook_id, c.attempts, m.type,
           m.subject, m.seq, m.body
    FROM claimed c JOIN outbound_message m ON m.id = c.message_id
    ORDER BY m.id;
END
$$;


ALTER FUNCTION mt5credit.outbound_claim(p_sender text, p_endpoints text[], p_lease_seconds integer, p_limit integer) OWNER TO mt5credit_owner;

--
-- Name: outbound_credit_data(bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.outbound_credit_data(p_credit bigint) RETURNS jsonb
    LANGUAGE sql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object(
        'deposit', d.reference,
        'withdrawal', w.reference,
        'client_id', coalesce(d.client_id, w.client_id),
        'mt5_server', c.mt5_server,
        'mt5_login', c.mt5_login,
        'credit', c.reference,
        'kind', c.kind,
        'direction', c.direction,
        'amount_minor', c.amount_minor,
        'currency', c.currency,
        'paid_amount_minor', c.paid_amount_minor,
        'paid_currency', c.paid_currency,
        -- exact: a string, never a float
        'fx_rate', c.fx_rate::text,
        'provider', c.provider,
        'provider_payment_id', c.provider_payment_id,
        'mt5_deal_ticket', c.mt5_deal_ticket,
        'status', c.status))
    FROM mt5_credit c
    LEFT JOIN deposit d ON d.id = c.deposit_id
    LEFT JOIN withdrawal w ON w.id = c.withdrawal_id
    WHERE c.id = p_credit
$$;


ALTER FUNCTION mt5credit.outbound_credit_data(p_credit bigint) OWNER TO mt5credit_owner;

--
-- Name: outbound_delivered(bigint, text, text, integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.outbound_delivered(p_message bigint, p_endpoint text, p_sender text, p_http_status integer) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_attempt  integer;
BEGIN
    UPDATE outbound_delivery
    SET status = 'delivered', delivered_at = clock_timestamp(),
        claimed_by = NULL, lease_expires_at = NULL,
        last_http_status = p_http_status, last_error = NULL
    WHERE message_id = p_message AND endpoint = p_endpoint
      AND status = 'sending' AND claimed_by = p_sender
    RETURNING attempts INTO v_attempt;

    IF NOT FOUND THEN
        RETURN false;
    END IF;

    INSERT INTO outbound_attempt (message_id, endpoint, attempt, sender,
                                  outcome, http_status)
    VALUES (p_message, p_endpoint, v_attempt, p_sender, 'delivered',
            p_http_status);

    UPDATE outbound_endpoint
    SET failing_since = NULL, last_success_at = clock_timestamp()
    WHERE name = p_endpoint;

    RETURN true;
END
$$;


ALTER FUNCTION mt5credit.outbound_delivered(p_message bigint, p_endpoint text, p_sender text, p_http_status integer) OWNER TO mt5credit_owner;

--
-- Name: outbound_disable_failing(text, text, integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.outbound_disable_failing(p_endpoint text, p_sender text, p_after_seconds integer) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    UPDATE outbound_endpoint
    SET disabled_at = clock_timestamp(),
        disabled_why = format('failing since %s, no delivery for %s s '
                              '(outbound_disable_after); noted by %s',
                              failing_since, p_after_seconds, p_sender)
    WHERE name = p_endpoint
      AND disabled_at IS NULL
      AND failing_since IS NOT NULL
      AND failing_since <= clock_timestamp()
                           - p_after_seconds * interval '1 second';
    RETURN FOUND;
END
$$;


ALTER FUNCTION mt5credit.outbound_disable_failing(p_endpoint text, p_sender text, p_after_seconds integer) OWNER TO mt5credit_owner;

--
-- Name: outbound_emit(text, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.outbound_emit(p_type text, p_subject text, p_data jsonb) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_seq  integer;
    v_id   bigint;
    v_at   timestamptz := clock_timestamp();
BEGIN
    INSERT INTO outbound_sequence AS s (subject, last)
    VALUES (p_subject, 1)
    ON CONFLICT (subject) DO UPDATE SET last = s.last + 1
    RETURNING s.last INTO v_seq;

    INSERT INTO outbound_message (type, subject, seq, body, created_at)
    VALUES (p_type, p_subject, v_seq,
            jsonb_build_object(
                'type', p_type,
                'timestamp', to_char(v_at AT TIME ZONE 'UTC',
                                     'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                'data', p_data || jsonb_build_object('subject', p_subject,
                                                     'sequence', v_seq))::text,
            v_at)
    RETURNING id INTO v_id;

    INSERT INTO outbound_delivery (message_id, endpoint, next_at)
    SELECT v_id, e.name, v_at FROM outbound_endpoint e
    WHERE e.retired_at IS NULL;

    RETURN v_id;
END
$$;


ALTER FUNCTION mt5credit.outbound_emit(p_type text, p_subject text, p_data jsonb) OWNER TO mt5credit_owner;

--
-- Name: outbound_endpoint_enable(text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.outbound_endpoint_enable(p_name text, p_reason text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    IF coalesce(btrim(p_reason), '') = '' THEN
        RAISE EXCEPTION 'enabling an endpoint needs a reason'
            USING ERRCODE = 'MC161';
    END IF;

    UPDATE outbound_endpoint
    SET disabled_at = NULL, disabled_why = NULL, failing_since = NULL,
        retired_at = NULL
    WHERE name = p_name AND disabled_at IS NOT NULL;

    IF FOUND THEN
        INSERT INTO outbound_replay (reason, since, endpoint, deliveries)
        SELECT 'enabled: ' || p_reason, clock_timestamp(), p_name,
               count(*)::integer
        FROM outbound_delivery WHERE endpoint = p_name AND status = 'pending';
    END IF;
    RETURN FOUND;
END
$$;


ALTER FUNCTION mt5credit.outbound_endpoint_enable(p_name text, p_reason text) OWNER TO mt5credit_owner;

--
-- Name: outbound_endpoint_register(text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.outbound_endpoint_register(p_name text) RETURNS TABLE(disabled_at timestamp with time zone, disabled_why text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    INSERT INTO outbound_endpoint (name, registered_by)
    VALUES (p_name, session_user)
    ON CONFLICT (name) DO NOTHING;

    RETURN QUERY SELECT e.disabled_at, e.disabled_why
                 FROM outbound_endpoint e WHERE e.name = p_name;
END
$$;


ALTER FUNCTION mt5credit.outbound_endpoint_register(p_name text) OWNER TO mt5credit_owner;

--
-- Name: outbound_endpoint_retire(text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.outbound_endpoint_retire(p_name text, p_reason text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    IF coalesce(btrim(p_reason), '') = '' THEN
        RAISE EXCEPTION 'retiring an endpoint needs a reason'
            USING ERRCODE = 'MC161';
    END IF;

    UPDATE outbound_endpoint
    SET retired_at = clock_timestamp(),
        disabled_at = coalesce(disabled_at, clock_timestamp()),
        disabled_why = format('retired by %s: %s', person(), p_reason)
    WHERE name = p_name AND retired_at IS NULL;

    IF NOT FOUND THEN
        RETURN false;
    END IF;

    -- on record beside the replays and enablings: who, when, why
    INSERT INTO outbound_replay (reason, since, endpoint, deliveries)
    VALUES ('retired: ' || p_reason, clock_timestamp(), p_name, 0);
    RETURN true;
END
$$;


ALTER FUNCTION mt5credit.outbound_endpoint_retire(p_name text, p_reason text) OWNER TO mt5credit_owner;

--
-- Name: outbound_failed(bigint, text, text, integer, text, integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.outbound_failed(p_message bigint, p_endpoint text, p_sender text, p_http_status integer, p_error text, p_retry_seconds integer) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_attempt  integer;
    v_done     boolean := p_retry_seconds IS NULL;
    v_now      timestamptz := clock_timestamp();
BEGIN
    UPDATE outbound_delivery
    SET status = CASE WHEN v_done THEN 'exhausted' ELSE 'pending' END,
        exhausted_at = CASE WHEN v_done THEN v_now END,
        next_at = CASE WHEN v_done THEN next_at
                       ELSE v_now + p_retry_seconds * interval '1 second'
                  END,
        claimed_by = NULL, lease_expires_at = NULL,
        last_http_status = p_http_status, last_error = left(p_error, 500)
    WHERE message_id = p_message AND endpoint = p_endpoint
      AND status = 'sending' AND claimed_by = p_sender
    RETURNING attempts INTO v_attempt;

    IF NOT FOUND THEN
        RETURN 'lost';
    END IF;

    INSERT INTO outbound_attempt (message_id, endpoint, attempt, sender,
                                  outcome, http_status, error)
    VALUES (p_message, p_endpoint, v_attempt, p_sender,
            CASE WHEN v_done THEN 'exhausted' ELSE 'failed' END,
            p_http_status, left(p_error, 500));

    UPDATE outbound_endpoint
    SET failing_since = coalesce(failing_since, v_now)
    WHERE name = p_endpoint;

    RETURN CASE WHEN v_done THEN 'exhausted' ELSE 'retry' END;
END
$$;


ALTER FUNCTION mt5credit.outbound_failed(p_message bigint, p_endpoint text, p_sender text, p_http_status integer, p_error text, p_retry_seconds integer) OWNER TO mt5credit_owner;

--
-- Name: outbound_list(timestamp with time zone, text, text, integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.outbound_list(p_since timestamp with time zone, p_status text, p_subject text, p_limit integer) RETURNS TABLE(webhook_id text, type text, subject text, seq integer, created_at timestamp with time zone, endpoint text, status text, attempts integer, last_http_status integer, last_error text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT m.webhook_id, m.type, m.subject, m.seq, m.created_at,
           d.endpoint, d.status, d.attempts, d.last_http_status, d.last_error
    FROM outbound_message m
    LEFT JOIN outbound_delivery d ON d.message_id = m.id
    WHERE m.created_at >= coalesce(p_since, '-infinity')
      AND (p_status IS NULL OR d.status = p_status)
      AND m.subject = coalesce(p_subject, m.subject)
    ORDER BY m.id DESC, d.endpoint
    LIMIT least(coalesce(p_limit, 100), 10000)
$$;


ALTER FUNCTION mt5credit.outbound_list(p_since timestamp with time zone, p_status text, p_subject text, p_limit integer) OWNER TO mt5credit_owner;

--
-- Name: outbound_message_fixed(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.outbound_message_fixed() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    RAISE EXCEPTION 'an outbound message is never changed or deleted: '
                    'it is what its receivers were sent'
        USING ERRCODE = 'MC160';
END
$$;


ALTER FUNCTION mt5credit.outbound_message_fixed() OWNER TO mt5credit_owner;

--
-- Name: outbound_on_case(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.outbound_on_case() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_data  jsonb := '{}';
BEGIN
    IF NEW.credit_id IS NOT NULL THEN
        v_data := coalesce(outbound_credit_data(NEW.credit_id), '{}');
    END IF;

    v_data := v_data || jsonb_strip_nulls(jsonb_build_object(
        'case_id', NEW.id, 'case_kind', NEW.kind,
        'severity', NEW.severity,
        'deposit', coalesce((SELECT reference FROM deposit
                             WHERE id = NEW.deposit_id), v_data->>'deposit'),
        'case_amount_minor', NEW.amount_minor,
        'case_currency', NEW.currency,
        'at', NEW.opened_at));

    PERFORM outbound_emit('case.opened', 'case:' || NEW.id, v_data);
    RETURN NULL;
END
$$;


ALTER FUNCTION mt5credit.outbound_on_case() OWNER TO mt5credit_owner;

--
-- Name: outbound_on_credit(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.outbound_on_credit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_from  text := CASE WHEN TG_OP = 'UPDATE' THEN OLD.status END;
    v_type  text;
BEGIN
    v_type := CASE
        WHEN NEW.kind = 'deposit' THEN
            CASE NEW.status
            WHEN 'done' THEN 'deposit.credited'
            WHEN 'held' THEN 'deposit.held'
            -- two people returned a held payment to its source (079)
            WHEN 'failed' THEN CASE WHEN v_from = 'held'
                                    THEN 'deposit.returned'
                                    ELSE 'deposit.failed' END
            END
        WHEN NEW.kind = 'refund' AND NEW.status = 'done'
            THEN 'deposit.refunded'
        WHEN NEW.kind = 'chargeback' AND NEW.status = 'done' THEN
            CASE WHEN NEW.direction = 'debit' THEN 'deposit.chargeback'
                 ELSE 'deposit.chargeback_reversed' END
        WHEN NEW.kind = 'withdrawal' THEN
            CASE NEW.status
            WHEN 'done' THEN 'withdrawal.debited'
            WHEN 'failed' THEN 'withdrawal.failed'
            END
        END;

    IF v_type IS NULL THEN
        RETURN NULL;
    END IF;

    PERFORM outbound_emit(v_type,
        CASE WHEN NEW.deposit_id IS NOT NULL THEN 'deposit:' || NEW.deposit_id
             ELSE 'withdrawal:' || NEW.withdrawal_id END,
        outbound_credit_data(NEW.id)
            || jsonb_build_object('from_status', v_from,
                                  'at', clock_timestamp()));
    RETURN NULL;
END
$$;


ALTER FUNCTION mt5credit.outbound_on_credit() OWNER TO mt5credit_owner;

--
-- Name: outbound_on_deposit(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.outbound_on_deposit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    PERFORM outbound_emit('deposit.failed', 'deposit:' || d.id,
        jsonb_build_object('deposit', d.reference,
                           'client_id', d.client_id,
                           'mt5_server', d.mt5_server,
                           'mt5_login', d.mt5_login,
                           'amount_minor', d.amount_minor,
                           'currency', d.currency,
                           'provider', d.provider,
                           'status', NEW.to_status,
                           'from_status', NEW.from_status,
                           'reason', 'payment_failed',
                           'at', NEW.at))
    FROM deposit d WHERE d.id = NEW.deposit_id;
    RETURN NULL;
END
$$;


ALTER FUNCTION mt5credit.outbound_on_deposit() OWNER TO mt5credit_owner;

--
-- Name: outbound_on_leg(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.outbound_on_leg() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_leg   jsonb := to_jsonb(NEW);
    v_paid  boolean := NEW.status IN ('paid', 'succeeded');
BEGIN
    PERFORM outbound_emit(
        CASE WHEN v_paid THEN 'withdrawal.paid' ELSE 'withdrawal.failed' END,
        'withdrawal:' || NEW.withdrawal_id,
        jsonb_strip_nulls(jsonb_build_object(
            'withdrawal', w.reference, 'client_id', w.client_id,
            'mt5_server', w.mt5_server, 'mt5_login', w.mt5_login,
            'withdrawal_amount_minor', w.amount_minor,
            'withdrawal_currency', w.currency,
            'leg', NEW.leg, 'leg_kind', NEW.leg_kind,
            'leg_reference', NEW.reference,
            'amount_minor', NEW.amount_minor, 'currency', NEW.currency,
            'provider', NEW.provider,
            'provider_payout_id', v_leg->>'provider_payout_id',
            'provider_refund_id', v_leg->>'provider_refund_id',
            'failure_code', NEW.failure_code,
            'status', NEW.status, 'from_status', OLD.status,
            'at', clock_timestamp())))
    FROM withdrawal w WHERE w.id = NEW.withdrawal_id;
    RETURN NULL;
END
$$;


ALTER FUNCTION mt5credit.outbound_on_leg() OWNER TO mt5credit_owner;

--
-- Name: outbound_on_withdrawal(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.outbound_on_withdrawal() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    PERFORM outbound_emit('withdrawal.' || NEW.status,
        'withdrawal:' || NEW.id,
        jsonb_strip_nulls(jsonb_build_object(
            'withdrawal', NEW.reference,
            'client_id', NEW.client_id,
            'mt5_server', NEW.mt5_server,
            'mt5_login', NEW.mt5_login,
            'amount_minor', NEW.amount_minor,
            'currency', NEW.currency,
            'provider', NEW.provider,
            'status', NEW.status,
            -- a hold reads as the request it was (086's client view)
            'from_status', CASE WHEN OLD.status = 'held' THEN 'requested'
                                ELSE OLD.status END,
            'plan_no', NEW.plan_no,
            'at', NEW.updated_at)));
    RETURN NULL;
END
$$;


ALTER FUNCTION mt5credit.outbound_on_withdrawal() OWNER TO mt5credit_owner;

--
-- Name: outbound_release(bigint, text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.outbound_release(p_message bigint, p_endpoint text, p_sender text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    UPDATE outbound_delivery
    SET status = 'pending', attempts = attempts - 1,
        next_at = clock_timestamp(), claimed_by = NULL,
        lease_expires_at = NULL
    WHERE message_id = p_message AND endpoint = p_endpoint
      AND status = 'sending' AND claimed_by = p_sender;
    RETURN FOUND;
END
$$;


ALTER FUNCTION mt5credit.outbound_release(p_message bigint, p_endpoint text, p_sender text) OWNER TO mt5credit_owner;

--
-- Name: outbound_replay(text, text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.outbound_replay(p_webhook_id text, p_endpoint text, p_reason text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_n  integer;
BEGIN
    IF coalesce(btrim(p_reason), '') = '' THEN
        RAISE EXCEPTION 'a replay needs a reason' USING ERRCODE = 'MC161';
    END IF;

    IF NOT EXISTS (SELECT 1 FROM outbound_message
                   WHERE webhook_id = p_webhook_id)
    THEN
        RAISE EXCEPTION 'no outbound message %', p_webhook_id
            USING ERRCODE = 'MC162';
    END IF;

    UPDATE outbound_delivery d
    SET status = 'pending', attempts = 0, next_at = clock_timestamp(),
        delivered_at = NULL, exhausted_at = NULL
    FROM outbound_message m
    WHERE m.webhook_id = p_webhook_id AND d.message_id = m.id
      AND d.endpoint = coalesce(p_endpoint, d.endpoint)
      AND d.status <> 'sending';
    GET DIAGNOSTICS v_n = ROW_COUNT;

    INSERT INTO outbound_replay (reason, webhook_id, endpoint, deliveries)
    VALUES (p_reason, p_webhook_id, p_endpoint, v_n);
    RETURN v_n;
END
$$;


ALTER FUNCTION mt5credit.outbound_replay(p_webhook_id text, p_endpoint text, p_reason text) OWNER TO mt5credit_owner;

--
-- Name: outbound_replay_since(timestamp with time zone, text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.outbound_replay_since(p_since timestamp with time zone, p_endpoint text, p_reason text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_n  integer;
    v_k  integer;
BEGIN
    IF coalesce(btrim(p_reason), '') = '' THEN
        RAISE EXCEPTION 'a replay needs a reason' USING ERRCODE = 'MC161';
    END IF;

    IF p_since IS NULL OR p_since > clock_timestamp() THEN
        RAISE EXCEPTION 'replay since when? a time in the past'
            USING ERRCODE = 'MC161';
    END IF;

    IF p_endpoint IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM outbound_endpoint WHERE name = p_endpoint)
    THEN
        RAISE EXCEPTION 'no outbound endpoint %', p_endpoint
            USING ERRCODE = 'MC162';
    END IF;

    UPDATE outbound_delivery d
    SET status = 'pending', attempts = 0, next_at = clock_timestamp(),
        delivered_at = NULL, exhausted_at = NULL
    FROM outbound_message m
    WHERE m.created_at >= p_since AND d.message_id = m.id
      AND d.endpoint = coalesce(p_endpoint, d.endpoint)
      AND d.status <> 'sending';
    GET DIAGNOSTICS v_n = ROW_COUNT;

    INSERT INTO outbound_delivery (message_id, endpoint)
    SELECT m.id, e.name
    FROM outbound_message m CROSS JOIN outbound_endpoint e
    WHERE m.created_at >= p_since
      AND e.name = coalesce(p_endpoint, e.name)
      AND (e.retired_at IS NULL OR e.name = p_endpoint)
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS v_k = ROW_COUNT;

    INSERT INTO outbound_replay (reason, since, endpoint, deliveries)
    VALUES (p_reason, p_since, p_endpoint, v_n + v_k);
    RETURN v_n + v_k;
END
$$;


ALTER FUNCTION mt5credit.outbound_replay_since(p_since timestamp with time zone, p_endpoint text, p_reason text) OWNER TO mt5credit_owner;

--
-- Name: outbound_show(text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.outbound_show(p_webhook_id text) RETURNS jsonb
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT jsonb_build_object(
        'webhook_id', m.webhook_id, 'type', m.type, 'subject', m.subject,
        'sequence', m.seq, 'created_at', m.created_at, 'body', m.body,
        'deliveries', (SELECT coalesce(jsonb_agg(to_jsonb(d)
                                                 ORDER BY d.endpoint), '[]')
                       FROM outbound_delivery d WHERE d.message_id = m.id),
        'attempts', (SELECT coalesce(jsonb_agg(to_jsonb(a) ORDER BY a.id),
                                     '[]')
                     FROM outbound_attempt a WHERE a.message_id = m.id),
        'replays', (SELECT coalesce(jsonb_agg(to_jsonb(r) ORDER BY r.id),
                                    '[]')
                    FROM outbound_replay r
                    WHERE r.webhook_id = m.webhook_id))
    FROM outbound_message m WHERE m.webhook_id = p_webhook_id
$$;


ALTER FUNCTION mt5credit.outbound_show(p_webhook_id text) OWNER TO mt5credit_owner;

--
-- Name: outbound_sweep(text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.outbound_sweep(p_sender text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_n  integer;
BEGIN
    WITH gone AS (
        UPDATE outbound_delivery d
        SET status = 'pending', next_at = clock_timestamp(),
            claimed_by = NULL, lease_expires_at = NULL,
            last_error = 'lease expired: its sender stopped mid-send'
        WHERE d.status = 'sending'
          AND d.lease_expires_at < clock_timestamp()
        RETURNING d.message_id, d.endpoint, d.attempts
    )
    INSERT INTO outbound_attempt (message_id, endpoint, attempt, sender,
                                  outcome, error)
    SELECT g.message_id, g.endpoint, g.attempts, p_sender, 'lease_expired',
           'its sender stopped mid-send'
    FROM gone g;

    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END
$$;


ALTER FUNCTION mt5credit.outbound_sweep(p_sender text) OWNER TO mt5credit_owner;

--
-- Name: pause_guard(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.pause_guard() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'a pause is never deleted: it is the record of who '
                        'stopped crediting and why' USING ERRCODE = 'MC100';
    END IF;
    IF OLD.resumed_at IS NOT NULL
       OR (NEW.id, NEW.scope, NEW.target, NEW.reason, NEW.paused_by,
           NEW.paused_at)
          IS DISTINCT FROM
          (OLD.id, OLD.scope, OLD.target, OLD.reason, OLD.paused_by,
           OLD.paused_at)
    THEN
        RAISE EXCEPTION 'a pause only changes by being resumed, once'
            USING ERRCODE = 'MC100';
    END IF;
    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.pause_guard() OWNER TO mt5credit_owner;

--
-- Name: pause_list(boolean); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.pause_list(p_all boolean) RETURNS TABLE(id bigint, scope text, target text, reason text, paused_by text, paused_at timestamp with time zone, resumed_by text, resumed_at timestamp with time zone, resume_note text, held bigint)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT p.id, p.scope, p.target, p.reason, p.paused_by, p.paused_at,
           p.resumed_by, p.resumed_at, p.resume_note,
           CASE WHEN p.resumed_at IS NOT NULL THEN 0 ELSE
               (SELECT count(*) FROM mt5_credit c
                WHERE c.status = 'pending'
                  AND CASE p.scope WHEN 'server' THEN c.mt5_server
                                   WHEN 'provider' THEN c.provider
                                   ELSE c.kind END = p.target)
               + CASE WHEN p.scope = 'provider' THEN
                     (SELECT count(*) FROM withdrawal_refund r
                      WHERE r.status = 'pending' AND r.provider = p.target)
                     + (SELECT count(*) FROM payout o
                        WHERE o.status = 'pending' AND o.provider = p.target)
                 ELSE 0 END
           END
    FROM pause p
    WHERE p_all OR p.resumed_at IS NULL
    ORDER BY p.resumed_at IS NOT NULL, p.paused_at DESC, p.id DESC
$$;


ALTER FUNCTION mt5credit.pause_list(p_all boolean) OWNER TO mt5credit_owner;

--
-- Name: pause_resume(text, text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.pause_resume(p_scope text, p_target text, p_note text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_id  bigint;
BEGIN
    UPDATE pause
    SET resumed_by = mt5credit.person(), resumed_at = clock_timestamp(),
        resume_note = nullif(btrim(p_note), '')
    WHERE scope = p_scope AND target = p_target AND resumed_at IS NULL
    RETURNING id INTO v_id;
    IF v_id IS NULL THEN
        RAISE EXCEPTION '% % is not paused', p_scope, p_target
            USING ERRCODE = 'MC103';
    END IF;
    RETURN v_id;
END
$$;


ALTER FUNCTION mt5credit.pause_resume(p_scope text, p_target text, p_note text) OWNER TO mt5credit_owner;

--
-- Name: pause_set(text, text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.pause_set(p_scope text, p_target text, p_reason text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_id  bigint;
    v     record;
BEGIN
    IF p_scope IS NULL OR p_scope NOT IN ('server', 'provider', 'kind') THEN
        RAISE EXCEPTION 'pause what? scope is server, provider or kind, '
                        'not "%"', p_scope USING ERRCODE = 'MC101';
    END IF;
    IF p_reason IS NULL OR length(btrim(p_reason)) < 3 THEN
        RAISE EXCEPTION 'a pause needs its reason: why crediting stops'
            USING ERRCODE = 'MC101';
    END IF;

    SELECT paused_by, paused_at, reason INTO v
    FROM pause
    WHERE scope = p_scope AND target = p_target AND resumed_at IS NULL;
    IF FOUND THEN
        RAISE EXCEPTION '% % is already paused, since % by %: %', p_scope,
            p_target, v.paused_at, v.paused_by, v.reason
            USING ERRCODE = 'MC102';
    END IF;

    BEGIN
        INSERT INTO pause (scope, target, reason, paused_by)
        VALUES (p_scope, p_target, p_reason, mt5credit.person())
        RETURNING id INTO v_id;
    EXCEPTION
        WHEN unique_violation THEN
            RAISE EXCEPTION '% % was paused by someone else just now',
                p_scope, p_target USING ERRCODE = 'MC102';
        WHEN check_violation THEN
            RAISE EXCEPTION 'no % is named "%": %', p_scope, p_target,
                CASE p_scope
                    WHEN 'kind' THEN 'deposit, refund, chargeback, '
                                     'correction or withdrawal'
                    WHEN 'provider' THEN 'a provider''s name as in its '
                                         'webhooks (stripe)'
                    ELSE 'an MT5 server''s name as configured (live1)'
                END USING ERRCODE = 'MC101';
    END;
    RETURN v_id;
END
$$;


ALTER FUNCTION mt5credit.pause_set(p_scope text, p_target text, p_reason text) OWNER TO mt5credit_owner;

--
-- Name: paused(text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.paused(p_scope text, p_target text) RETURNS boolean
    LANGUAGE plpgsql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM pause
                   WHERE scope = p_scope AND target = p_target
                     AND resumed_at IS NULL);
END
$$;


ALTER FUNCTION mt5credit.paused(p_scope text, p_target text) OWNER TO mt5credit_owner;

--
-- Name: payload_amount(jsonb, text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.payload_amount(p jsonb, p_form text, p_currency text) RETURNS bigint
    LANGUAGE sql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT CASE p_form WHEN 'minor' THEN json_minor(p)
                       WHEN 'decimal' THEN json_decimal_minor(p, p_currency)
           END
$$;


ALTER FUNCTION mt5credit.payload_amount(p jsonb, p_form text, p_currency text) OWNER TO mt5credit_owner;

--
-- Name: payload_event(text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.payload_event(p_provider text, p_body jsonb, OUT event_id text, OUT event_type text, OUT event_part jsonpath) RETURNS record
    LANGUAGE sql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT json_text(payload_value(p_body, f.event_id)),
           json_text(payload_value(p_body, f.event_type)), f.event_part
    FROM payload_format f
    WHERE f.payload = coalesce((SELECT p.payload FROM provider_payload p
                                WHERE p.provider = p_provider), 'generic')
$$;


ALTER FUNCTION mt5credit.payload_event(p_provider text, p_body jsonb, OUT event_id text, OUT event_type text, OUT event_part jsonpath) OWNER TO mt5credit_owner;

--
-- Name: payload_facts(text, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.payload_facts(p_provider text, p_type text, p_body jsonb) RETURNS SETOF mt5credit.payment_fact
    LANGUAGE plpgsql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_payload text;
BEGIN
    SELECT payload INTO v_payload FROM provider_payload
    WHERE provider = p_provider;

    IF v_payload = 'stripe' THEN
        RETURN QUERY SELECT * FROM stripe_facts(p_type, p_body);
        RETURN QUERY SELECT * FROM status_facts(p_provider, p_type, p_body);
    ELSE
        RETURN QUERY SELECT * FROM rule_facts(coalesce(v_payload, 'generic'),
                                              p_type, p_body);
    END IF;
END
$$;


ALTER FUNCTION mt5credit.payload_facts(p_provider text, p_type text, p_body jsonb) OWNER TO mt5credit_owner;

--
-- Name: payload_format_guard(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.payload_format_guard() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    RAISE EXCEPTION 'payload format %: fixed once written; a new reading '
                    'needs a new format', OLD.payload
        USING ERRCODE = 'MC013';
END
$$;


ALTER FUNCTION mt5credit.payload_format_guard() OWNER TO mt5credit_owner;

--
-- Name: payload_rule_guard(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.payload_rule_guard() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    RAISE EXCEPTION 'payload rule %/% step %: rules are fixed once written; '
                    'a new reading needs a new format',
                    OLD.payload, OLD.event_type, OLD.step
        USING ERRCODE = 'MC013';
END
$$;


ALTER FUNCTION mt5credit.payload_rule_guard() OWNER TO mt5credit_owner;

--
-- Name: payload_value(jsonb, jsonpath); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.payload_value(p_body jsonb, p_path jsonpath) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT CASE WHEN p_path IS NOT NULL
                THEN jsonb_path_query_first(p_body, p_path, '{}', true) END
$$;


ALTER FUNCTION mt5credit.payload_value(p_body jsonb, p_path jsonpath) OWNER TO mt5credit_owner;

--
-- Name: payment_credit_after_rewind(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.payment_credit_after_rewind() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_from    timestamptz;
    v_detail  text;
BEGIN
    SELECT min(r.lost_from) INTO v_from
    FROM database_rewind r
    WHERE r.at > clock_timestamp() - interval '7 days';

    IF v_from IS NULL THEN
        RETURN NULL;
    END IF;

    -- the inserter's transaction: its detail is put back afterwards
    v_detail := current_setting('mt5credit.detail', true);
    PERFORM set_config('mt5credit.detail',
        (coalesce(nullif(v_detail, ''), '{}')::jsonb
         || jsonb_build_object('step', 'a payment''s credit within a week '
                               'of a rewind: looked up first',
                               'look_from', v_from))::text, true);
    UPDATE mt5_credit
    SET status = 'unknown', attempts = attempts + 1,
        lease_expires_at = clock_timestamp(), next_check_at = NULL,
        look_from = v_from
    WHERE id = NEW.id AND status = 'pending';
    PERFORM set_config('mt5credit.detail', coalesce(v_detail, ''), true);

    RETURN NULL;
END
$$;


ALTER FUNCTION mt5credit.payment_credit_after_rewind() OWNER TO mt5credit_owner;

--
-- Name: payment_reference_key(text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.payment_reference_key(p_provider text, p_payment text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT substr(encode(sha256(convert_to(p_provider || ':' || p_payment,
                                           'UTF8')), 'hex'), 1, 18)
$$;


ALTER FUNCTION mt5credit.payment_reference_key(p_provider text, p_payment text) OWNER TO mt5credit_owner;

--
-- Name: FUNCTION payment_reference_key(p_provider text, p_payment text); Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON FUNCTION mt5credit.payment_reference_key(p_provider text, p_payment text) IS 'The part of a payment''s credit reference after "dep:" (066)';


--
-- Name: payout_absent(bigint, integer, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.payout_absent(p_id bigint, p_attempt integer, p_sender text, p_detail jsonb) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    PERFORM set_actor(p_sender, p_detail);
    UPDATE payout
    SET status = 'pending', next_check_at = NULL, lease_expires_at = NULL
    WHERE id = p_id AND status = 'unknown' AND attempts = p_attempt;
    RETURN FOUND;
END
$$;


ALTER FUNCTION mt5credit.payout_absent(p_id bigint, p_attempt integer, p_sender text, p_detail jsonb) OWNER TO mt5credit_owner;

--
-- Name: payout_after_debit(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.payout_after_debit() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    w  withdrawal;
BEGIN
    SELECT * INTO STRICT w FROM withdrawal WHERE id = NEW.withdrawal_id;

    IF w.plan_no IS NULL THEN
        INSERT INTO payout (withdrawal_id, debit_credit_id, provider,
                            amount_minor, currency, destination)
        VALUES (w.id, NEW.id, w.provider, w.amount_minor, w.currency,
                w.destination);
        RETURN NULL;
    END IF;

    INSERT INTO withdrawal_refund (withdrawal_id, plan_no, leg,
                                   debit_credit_id, provider, credit_id,
                                   payment_key, amount_minor, currency,
                                   account_amount_minor)
    SELECT l.withdrawal_id, l.plan_no, l.leg, NEW.id, l.provider,
           l.credit_id, l.payment_key, l.amount_minor, l.currency,
           l.account_amount_minor
    FROM withdrawal_leg l
    WHERE l.withdrawal_id = w.id AND l.plan_no = w.plan_no
      AND l.kind = 'refund'
    ORDER BY l.leg;

    INSERT INTO payout (withdrawal_id, debit_credit_id, provider,
                        amount_minor, currency, destination, plan_no, leg)
    SELECT w.id, NEW.id, l.provider, l.amount_minor, l.currency,
           w.destination, l.plan_no, l.leg
    FROM withdrawal_leg l
    WHERE l.withdrawal_id = w.id AND l.plan_no = w.plan_no
      AND l.kind = 'payout';
    RETURN NULL;
END
$$;


ALTER FUNCTION mt5credit.payout_after_debit() OWNER TO mt5credit_owner;

--
-- Name: payout_answered(bigint, integer, text, text, text, text, text, text, jsonb, integer, integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.payout_answered(p_id bigint, p_attempt integer, p_from text, p_payout_id text, p_status text, p_failure_code text, p_failure_message text, p_sender text, p_detail jsonb, p_recheck_seconds integer, p_watch_seconds integer) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    p        payout;
    v_to     text;
    v_now    timestamptz := clock_timestamp();
    v_until  timestamptz;
BEGIN
    IF p_from NOT IN ('sending', 'unknown', 'accepted', 'paid') THEN
        RAISE EXCEPTION 'not a state a payout is answered in: %', p_from
            USING ERRCODE = 'MC082';
    END IF;

    v_to := CASE
            WHEN p_status IN ('pending', 'in_transit') THEN 'accepted'
            WHEN p_status = 'paid' THEN 'paid'
            WHEN p_status IN ('failed', 'canceled', 'declined') THEN 'rejected'
            END;
    IF v_to IS NULL THEN
        RAISE EXCEPTION 'payout status "%" is not one we know', p_status
            USING ERRCODE = 'MC082';
    END IF;
    IF p_from = 'paid' AND v_to = 'accepted' THEN
        RAISE EXCEPTION 'payout %: paid, and now "%" at the provider: a paid '
                        'payout does not go back', p_id, p_status
            USING ERRCODE = 'MC082';
    END IF;

    PERFORM set_actor(p_sender, coalesce(p_detail, '{}')
                                || jsonb_build_object('provider_status',
                                                      p_status));

    SELECT * INTO p FROM payout
    WHERE id = p_id AND status = p_from AND attempts = p_attempt
      AND (provider_payout_id IS NULL OR provider_payout_id = p_payout_id)
    FOR UPDATE;
    IF NOT FOUND THEN
        RETURN 'stale';
    END IF;

    -- the watch starts when it is first seen paid, and never moves
    v_until := CASE WHEN v_to <> 'paid' THEN p.watch_until
                    WHEN p_from = 'paid' THEN p.watch_until
                    WHEN p_watch_seconds > 0
                    THEN v_now + make_interval(secs => p_watch_seconds)
                    END;

    UPDATE payout
    SET status = v_to, provider_payout_id = p_payout_id,
        provider_status = p_status,
        failure_code = CASE WHEN v_to = 'rejected'
                            THEN coalesce(p_failure_code, p_status) END,
        failure_message = CASE WHEN v_to = 'rejected'
                               THEN left(p_failure_message, 1000) END,
        lease_expires_at = NULL,
        watch_until = v_until,
        next_check_at = CASE
            WHEN v_to = 'accepted'
                 OR (v_to = 'paid' AND v_until IS NOT NULL
                     AND v_now + make_interval(secs => p_recheck_seconds)
                         < v_until)
            THEN v_now + make_interval(secs => p_recheck_seconds)
            WHEN v_to = 'paid' AND v_until > v_now
            THEN v_until                -- one last look at the end
            END
    WHERE id = p.id
    RETURNING * INTO p;

    IF v_to = 'rejected' THEN
        PERFORM payout_rejected_case(p);
    END IF;
    RETURN CASE WHEN p_from = 'paid' AND v_to = 'rejected' THEN 'returned'
                ELSE v_to END;
END
$$;


ALTER FUNCTION mt5credit.payout_answered(p_id bigint, p_attempt integer, p_from text, p_payout_id text, p_status text, p_failure_code text, p_failure_message text, p_sender text, p_detail jsonb, p_recheck_seconds integer, p_watch_seconds integer) OWNER TO mt5credit_owner;

--
-- Name: payout_check_due(text, integer, integer, integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.payout_check_due(p_provider text, p_margin_seconds integer, p_lookup_seconds integer, p_limit integer) RETURNS SETOF mt5credit.payout_item
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_id  bigint;
BEGIN
    FOR v_id IN
        WITH due AS (
            SELECT id FROM payout
            WHERE provider = p_provider
              AND ((status = 'unknown'
                    AND lease_expires_at
                        + make_interval(secs => p_margin_seconds)
                        < clock_timestamp())
                   OR status = 'accepted'
                   OR (status = 'paid' AND next_check_at IS NOT NULL))
              AND (next_check_at IS NULL OR next_check_at <= clock_timestamp())
            ORDER BY status <> 'unknown', next_check_at NULLS FIRST, id
            LIMIT p_limit
            FOR UPDATE SKIP LOCKED
        )
        UPDATE payout p
        SET next_check_at = clock_timestamp()
                            + make_interval(secs => p_lookup_seconds)
        FROM due
        WHERE p.id = due.id
        RETURNING p.id
    LOOP
        RETURN NEXT payout_item_of(v_id);
    END LOOP;
END
$$;


ALTER FUNCTION mt5credit.payout_check_due(p_provider text, p_margin_seconds integer, p_lookup_seconds integer, p_limit integer) OWNER TO mt5credit_owner;

--
-- Name: payout_check_failed(bigint, integer, text, text, integer, integer, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.payout_check_failed(p_id bigint, p_attempt integer, p_case_kind text, p_why text, p_backoff_seconds integer, p_max_lookups integer, p_sender text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    p  payout;
BEGIN
    IF p_case_kind NOT IN ('payout_no_answer', 'payout_conflict') THEN
        RAISE EXCEPTION 'not a payout case: %', p_case_kind
            USING ERRCODE = 'MC082';
    END IF;

    UPDATE payout
    SET lookups = lookups + 1,
        next_check_at = clock_timestamp()
                        + least(make_interval(secs => p_backoff_seconds)
                                * 2 ^ least(lookups, 16),
                                interval '1 day')
    WHERE id = p_id AND attempts = p_attempt
      AND (status IN ('unknown', 'accepted')
           OR (status = 'paid' AND next_check_at IS NOT NULL))
    RETURNING * INTO p;
    IF NOT FOUND THEN
        RETURN false;
    END IF;

    IF p_case_kind = 'payout_no_answer' AND p.lookups < p_max_lookups THEN
        RETURN false;
    END IF;

    PERFORM set_actor(p_sender, '{"step": "lookup"}');
    PERFORM open_case(p_case_kind,
        CASE p_case_kind WHEN 'payout_conflict' THEN 'critical'
                         ELSE 'high' END,
        p_case_kind || ':' || p.reference,
        jsonb_build_object('payout', p.reference, 'status', p.status,
                           'lookups', p.lookups, 'last', p_why,
                           'seen_at', clock_timestamp()),
        p.debit_credit_id, NULL, NULL, p.amount_minor, p.currency);
    RETURN true;
END
$$;


ALTER FUNCTION mt5credit.payout_check_failed(p_id bigint, p_attempt integer, p_case_kind text, p_why text, p_backoff_seconds integer, p_max_lookups integer, p_sender text) OWNER TO mt5credit_owner;

--
-- Name: payout_claim(text, text, integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.payout_claim(p_provider text, p_sender text, p_lease_seconds integer) RETURNS SETOF mt5credit.payout_item
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_id  bigint;
BEGIN
    IF p_lease_seconds < 1 THEN
        RAISE EXCEPTION 'lease must be at least a second' USING ERRCODE = 'MC020';
    END IF;
    IF paused('provider', p_provider) THEN
        RETURN;
    END IF;
    PERFORM set_actor(p_sender, '{"step": "claim"}');

    WITH next AS (
        SELECT id FROM payout
        WHERE status = 'pending' AND provider = p_provider
        ORDER BY id
        LIMIT 1
        FOR UPDATE SKIP LOCKED
    )
    UPDATE payout p
    SET status = 'sending', attempts = p.attempts + 1,
        claimed_by = left(p_sender, 200), claimed_at = clock_timestamp(),
        lease_expires_at = clock_timestamp()
                           + make_interval(secs => p_lease_seconds),
        first_sent_at = coalesce(p.first_sent_at, clock_timestamp()),
        next_check_at = NULL
    FROM next
    WHERE p.id = next.id AND p.status = 'pending'
    RETURNING p.id INTO v_id;

    IF v_id IS NOT NULL THEN
        RETURN NEXT payout_item_of(v_id);
    END IF;
END
$$;


ALTER FUNCTION mt5credit.payout_claim(p_provider text, p_sender text, p_lease_seconds integer) OWNER TO mt5credit_owner;

--
-- Name: payout_declined(bigint, integer, text, text, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.payout_declined(p_id bigint, p_attempt integer, p_failure_code text, p_failure_message text, p_sender text, p_detail jsonb) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    p  payout;
BEGIN
    PERFORM set_actor(p_sender, p_detail);
    UPDATE payout
    SET status = 'rejected', failure_code = p_failure_code,
        failure_message = left(p_failure_message, 1000),
        lease_expires_at = NULL
    WHERE id = p_id AND status = 'sending' AND attempts = p_attempt
    RETURNING * INTO p;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM payout_rejected_case(p);
    RETURN true;
END
$$;


ALTER FUNCTION mt5credit.payout_declined(p_id bigint, p_attempt integer, p_failure_code text, p_failure_message text, p_sender text, p_detail jsonb) OWNER TO mt5credit_owner;

--
-- Name: payout_guard_and_log(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.payout_guard_and_log() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO payout_history (payout_id, from_status, to_status,
                                    attempts, actor, detail)
        VALUES (NEW.id, NULL, NEW.status, NEW.attempts, credit_actor(),
                credit_detail());
        RETURN NEW;
    END IF;

    IF (NEW.withdrawal_id, NEW.debit_credit_id, NEW.provider,
        NEW.amount_minor, NEW.currency, NEW.destination, NEW.created_at)
       IS DISTINCT FROM
       (OLD.withdrawal_id, OLD.debit_credit_id, OLD.provider,
        OLD.amount_minor, OLD.currency, OLD.destination, OLD.created_at)
       OR (OLD.provider_payout_id IS NOT NULL
           AND NEW.provider_payout_id IS DISTINCT FROM OLD.provider_payout_id)
       OR NEW.attempts < OLD.attempts
    THEN
        RAISE EXCEPTION 'payout %: what it pays and whom the provider says '
                        'it is never change', OLD.reference
            USING ERRCODE = 'MC080';
    END IF;

    IF NEW.status IS DISTINCT FROM OLD.status THEN
        IF NOT EXISTS (SELECT 1 FROM payout_transition
                       WHERE from_status = OLD.status
                         AND to_status = NEW.status)
        THEN
            RAISE EXCEPTION 'payout %: % -> % is not a legal transition',
                            OLD.reference, OLD.status, NEW.status
                USING ERRCODE = 'MC081';
        END IF;

        INSERT INTO payout_history (payout_id, from_status, to_status,
                                    attempts, actor, detail)
        VALUES (NEW.id, OLD.status, NEW.status, NEW.attempts,
                credit_actor(), credit_detail());
    END IF;

    NEW.updated_at := now();
    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.payout_guard_and_log() OWNER TO mt5credit_owner;

--
-- Name: payout_item_of(bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.payout_item_of(p_id bigint) RETURNS mt5credit.payout_item
    LANGUAGE sql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT p.id, p.attempts, p.status, p.reference,
           CASE WHEN p.deployment_tag IS NULL THEN p.idempotency_key
                ELSE 'mt5credit-' || p.deployment_tag || '-payout-'
                     || p.withdrawal_id END,
           p.provider, p.amount_minor, p.currency, p.destination,
           p.provider_payout_id, mt5_comment(c.deployment_tag, c.reference),
           extract(epoch FROM p.first_sent_at)::bigint, p.deployment_tag
    FROM payout p
    JOIN mt5_credit c ON c.id = p.debit_credit_id
    WHERE p.id = p_id
$$;


ALTER FUNCTION mt5credit.payout_item_of(p_id bigint) OWNER TO mt5credit_owner;

--
-- Name: payout; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.payout (
    id bigint NOT NULL,
    withdrawal_id bigint NOT NULL,
    debit_credit_id bigint NOT NULL,
    provider text NOT NULL,
    amount_minor bigint NOT NULL,
    currency text NOT NULL,
    destination text NOT NULL,
    reference text GENERATED ALWAYS AS (('wd_'::text ||
CASE
    WHEN (withdrawal_id < 1000000) THEN lpad((withdrawal_id)::text, 6, '0'::text)
    ELSE (withdrawal_id)::text
END)) STORED NOT NULL,
    idempotency_key text GENERATED ALWAYS AS (('mt5credit-payout-'::text || withdrawal_id)) STORED NOT NULL,
    debit_kind text GENERATED ALWAYS AS ('withdrawal'::text) STORED NOT NULL,
    debit_status text GENERATED ALWAYS AS ('done'::text) STORED NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    claimed_by text,
    claimed_at timestamp with time zone,
    lease_expires_at timestamp with time zone,
    first_sent_at timestamp with time zone,
    next_check_at timestamp with time zone,
    lookups integer DEFAULT 0 NOT NULL,
    provider_payout_id text,
    provider_status text,
    failure_code text,
    failure_message text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    watch_until timestamp with time zone,
    deployment_tag text,
    plan_no integer,
    leg integer,
    leg_kind text GENERATED ALWAYS AS ('payout'::text) STORED NOT NULL,
    CONSTRAINT payout_amount_minor_check CHECK ((amount_minor > 0)),
    CONSTRAINT payout_attempts_check CHECK ((attempts >= 0)),
    CONSTRAINT payout_check CHECK (((status <> ALL (ARRAY['accepted'::text, 'paid'::text])) OR (provider_payout_id IS NOT NULL))),
    CONSTRAINT payout_check1 CHECK (((status <> 'rejected'::text) OR (failure_code IS NOT NULL))),
    CONSTRAINT payout_check2 CHECK (((status <> 'sending'::text) OR ((claimed_by IS NOT NULL) AND (claimed_at IS NOT NULL) AND (lease_expires_at IS NOT NULL)))),
    CONSTRAINT payout_check3 CHECK (((status = 'pending'::text) OR (attempts > 0))),
    CONSTRAINT payout_check4 CHECK (((attempts > 0) = (first_sent_at IS NOT NULL))),
    CONSTRAINT payout_failure_code_check CHECK ((length(failure_code) <= 128)),
    CONSTRAINT payout_failure_message_check CHECK ((length(failure_message) <= 1000)),
    CONSTRAINT payout_leg_whole CHECK (((plan_no IS NULL) = (leg IS NULL))),
    CONSTRAINT payout_lookups_check CHECK ((lookups >= 0)),
    CONSTRAINT payout_provider_payout_id_check CHECK ((provider_payout_id ~ '^[A-Za-z0-9_-]{1,255}$'::text)),
    CONSTRAINT payout_provider_status_check CHECK ((length(provider_status) <= 64)),
    CONSTRAINT payout_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'sending'::text, 'unknown'::text, 'accepted'::text, 'paid'::text, 'rejected'::text]))),
    CONSTRAINT payout_watch_only_when_paid CHECK (((watch_until IS NULL) OR (status = ANY (ARRAY['paid'::text, 'rejected'::text]))))
);


ALTER TABLE mt5credit.payout OWNER TO mt5credit_owner;

--
-- Name: TABLE payout; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.payout IS 'The payout of a withdrawal whose MT5 debit is done, and the state of sending it to the provider under one idempotency key.';


--
-- Name: COLUMN payout.watch_until; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.payout.watch_until IS 'paid only: asked about again until then, since a bank may still return it; NULL when not watched (or paid before 034)';


--
-- Name: COLUMN payout.deployment_tag; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.payout.deployment_tag IS 'the deployment tag when it was made (036): in its idempotency key and metadata';


--
-- Name: payout_rejected_case(mt5credit.payout); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.payout_rejected_case(p mt5credit.payout) RETURNS void
    LANGUAGE sql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT open_case('payout_rejected', 'critical',
        'payout_rejected:' || p.reference,
        jsonb_build_object('payout', p.reference,
                           'provider_payout_id', p.provider_payout_id,
                           'failure_code', p.failure_code,
                           'failure_message', p.failure_message,
                           'note', 'the MT5 debit stands and nothing was '
                                   'paid out: return the money with a '
                                   'correcting credit (two people)'),
        p.debit_credit_id, NULL, NULL, p.amount_minor, p.currency);
$$;


ALTER FUNCTION mt5credit.payout_rejected_case(p mt5credit.payout) OWNER TO mt5credit_owner;

--
-- Name: payout_release(bigint, integer, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.payout_release(p_id bigint, p_attempt integer, p_sender text, p_detail jsonb) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    PERFORM set_actor(p_sender, p_detail);
    UPDATE payout SET status = 'pending', lease_expires_at = NULL
    WHERE id = p_id AND status = 'sending' AND attempts = p_attempt;
    RETURN FOUND;
END
$$;


ALTER FUNCTION mt5credit.payout_release(p_id bigint, p_attempt integer, p_sender text, p_detail jsonb) OWNER TO mt5credit_owner;

--
-- Name: payout_sweep(text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.payout_sweep(p_sender text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_n  integer;
BEGIN
    PERFORM set_actor(p_sender, '{"step": "sweep", "reason": "lease expired"}');
    UPDATE payout SET status = 'unknown'
    WHERE status = 'sending' AND lease_expires_at < clock_timestamp();
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END
$$;


ALTER FUNCTION mt5credit.payout_sweep(p_sender text) OWNER TO mt5credit_owner;

--
-- Name: payout_unknown(bigint, integer, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.payout_unknown(p_id bigint, p_attempt integer, p_sender text, p_detail jsonb) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    PERFORM set_actor(p_sender, p_detail);
    UPDATE payout SET status = 'unknown'
    WHERE id = p_id AND status = 'sending' AND attempts = p_attempt;
    RETURN FOUND;
END
$$;


ALTER FUNCTION mt5credit.payout_unknown(p_id bigint, p_attempt integer, p_sender text, p_detail jsonb) OWNER TO mt5credit_owner;

--
-- Name: payout_whole_without_plan(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.payout_whole_without_plan() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    IF NEW.plan_no IS NULL AND NOT EXISTS (
           SELECT 1 FROM withdrawal w
           WHERE w.id = NEW.withdrawal_id AND w.plan_no IS NULL
             AND w.amount_minor = NEW.amount_minor)
    THEN
        RAISE EXCEPTION 'payout of withdrawal %: a withdrawal with a plan '
                        'pays out its payout leg, and one without pays its '
                        'whole amount', NEW.withdrawal_id
            USING ERRCODE = 'MC080';
    END IF;
    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.payout_whole_without_plan() OWNER TO mt5credit_owner;

--
-- Name: person_identity_admin(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.person_identity_admin() RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    IF current_setting('role') <> 'none'
       OR NOT pg_has_role(session_user, 'mt5credit_person_admin', 'USAGE')
    THEN
        RAISE EXCEPTION 'names are mapped by a person admin at their own '
                        'login (mt5credit persons), never through a set '
                        'role or a console login' USING ERRCODE = 'MC134';
    END IF;
END
$$;


ALTER FUNCTION mt5credit.person_identity_admin() OWNER TO mt5credit_owner;

--
-- Name: person_identity_list(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.person_identity_list() RETURNS TABLE(identity text, person text, mapped_by text, mapped_at timestamp with time zone)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT i.identity, r.rolname::text, i.mapped_by, i.mapped_at
    FROM console_identity i LEFT JOIN pg_roles r ON r.oid = i.person
    ORDER BY r.rolname, i.identity
$$;


ALTER FUNCTION mt5credit.person_identity_list() OWNER TO mt5credit_owner;

--
-- Name: person_identity_map(text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.person_identity_map(p_identity text, p_person text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_oid  oid;
BEGIN
    PERFORM person_identity_admin();

    SELECT oid INTO v_oid FROM pg_roles WHERE rolname = p_person;
    IF v_oid IS NULL OR NOT person_is(p_person) THEN
        RAISE EXCEPTION '"%" is no person (a member of mt5credit_person)',
                        p_person USING ERRCODE = 'MC133';
    END IF;

    INSERT INTO console_identity (identity, person, mapped_by)
    VALUES (p_identity, v_oid, session_user)
    ON CONFLICT (identity) DO UPDATE
    SET person = EXCLUDED.person, mapped_by = EXCLUDED.mapped_by,
        mapped_at = now();

    INSERT INTO console_identity_history (identity, person, action)
    VALUES (p_identity, p_person, 'map');
END
$$;


ALTER FUNCTION mt5credit.person_identity_map(p_identity text, p_person text) OWNER TO mt5credit_owner;

--
-- Name: person_identity_unmap(text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.person_identity_unmap(p_identity text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    PERFORM person_identity_admin();

    DELETE FROM console_identity WHERE identity = p_identity;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no identity "%"', p_identity
            USING ERRCODE = 'MC133';
    END IF;

    INSERT INTO console_identity_history (identity, person, action)
    VALUES (p_identity, NULL, 'unmap');
END
$$;


ALTER FUNCTION mt5credit.person_identity_unmap(p_identity text) OWNER TO mt5credit_owner;

--
-- Name: person_is(text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.person_is(p_role text) RETURNS boolean
    LANGUAGE sql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT p_role <> 'mt5credit_person'
           AND EXISTS (SELECT 1 FROM pg_roles WHERE rolname = p_role)
           AND pg_has_role(p_role, 'mt5credit_person', 'MEMBER')
           AND NOT pg_has_role(p_role, 'mt5credit_console', 'MEMBER')
$$;


ALTER FUNCTION mt5credit.person_is(p_role text) OWNER TO mt5credit_owner;

--
-- Name: person_totp_enrol(text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.person_totp_enrol(p_person text) RETURNS text
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$ SELECT person_totp_set(p_person, 'enrol') $$;


ALTER FUNCTION mt5credit.person_totp_enrol(p_person text) OWNER TO mt5credit_owner;

--
-- Name: person_totp_list(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.person_totp_list() RETURNS TABLE(person text, enrolled_by text, enrolled_at timestamp with time zone, tries_left integer, locked_until timestamp with time zone)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT r.rolname::text, t.enrolled_by, t.enrolled_at,
           step_up_tries_left(t.tries),
           CASE WHEN step_up_tries_left(t.tries) = 0
                THEN step_up_locked_until(t.tries) END
    FROM person_totp t JOIN pg_roles r ON r.oid = t.person
    ORDER BY r.rolname
$$;


ALTER FUNCTION mt5credit.person_totp_list() OWNER TO mt5credit_owner;

--
-- Name: person_totp_reset(text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.person_totp_reset(p_person text) RETURNS text
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$ SELECT person_totp_set(p_person, 'reset') $$;


ALTER FUNCTION mt5credit.person_totp_reset(p_person text) OWNER TO mt5credit_owner;

--
-- Name: person_totp_set(text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.person_totp_set(p_person text, p_action text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_oid     oid;
    v_secret  bytea := totp_new_secret();
    v_tries   regclass;
    v_rows    integer;
BEGIN
    IF step_up_needed() THEN
        RAISE EXCEPTION 'a second factor is enrolled at a login of one''s '
                        'own (mt5credit persons), never through a set role '
                        'or a console login' USING ERRCODE = 'MC141';
    END IF;

    IF NOT (session_user = p_person
            OR pg_has_role(session_user, 'mt5credit_person_admin', 'USAGE'))
    THEN
        RAISE EXCEPTION '% may not enrol %: a person admin '
                        '(mt5credit_person_admin) may, or % at their own '
                        'login', session_user, p_person, p_person
            USING ERRCODE = 'MC141';
    END IF;

    SELECT oid INTO v_oid FROM pg_roles WHERE rolname = p_person;
    IF v_oid IS NULL OR NOT person_is(p_person) THEN
        RAISE EXCEPTION '"%" is no person (a member of mt5credit_person)',
                        p_person USING ERRCODE = 'MC142';
    END IF;

    IF p_action = 'enrol' THEN
        EXECUTE format('CREATE SEQUENCE IF NOT EXISTS '
                       'mt5credit.person_totp_tries_%s MINVALUE 0 START 0',
                       v_oid);
        v_tries := format('mt5credit.person_totp_tries_%s', v_oid)::regclass;

        INSERT INTO person_totp (person, secret, enrolled_by, enrolled_at,
                                 tries)
        VALUES (v_oid, v_secret, session_user, clock_timestamp(), v_tries)
        ON CONFLICT (person) DO NOTHING;
        GET DIAGNOSTICS v_rows = ROW_COUNT;
        IF v_rows <> 1 THEN
            RAISE EXCEPTION '% has a second factor already: reset it '
                            '(mt5credit persons reset %)', p_person, p_person
                USING ERRCODE = 'MC142';
        END IF;
    ELSE
        -- a new secret; the newest used step and the tries stay
        UPDATE person_totp
        SET secret = v_secret, enrolled_by = session_user,
            enrolled_at = clock_timestamp()
        WHERE person = v_oid;
        GET DIAGNOSTICS v_rows = ROW_COUNT;
        IF v_rows <> 1 THEN
            RAISE EXCEPTION '% has no second factor to reset: enrol it '
                            '(mt5credit persons enrol %)', p_person, p_person
                USING ERRCODE = 'MC142';
        END IF;
    END IF;

    INSERT INTO person_totp_history (person, person_name, action, actor)
    VALUES (v_oid, p_person, p_action, session_user);

    RETURN totp_uri(p_person, v_secret);
END
$$;


ALTER FUNCTION mt5credit.person_totp_set(p_person text, p_action text) OWNER TO mt5credit_owner;

--
-- Name: program_answer_unvouched(text, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.program_answer_unvouched(p_provider text, p_type text, p_body jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_facts   payment_fact[];
    f         payment_fact;
    d         deposit;
    v_found   boolean;
    v_object  text := p_body #>> '{data,object,id}';
BEGIN
    -- read as ingest() will read it
    v_facts := ARRAY(SELECT x FROM payload_facts(p_provider, p_type,
                                                 p_body) x);

    FOREACH f IN ARRAY v_facts LOOP
        IF f.action = 'chargeback_reversal' THEN
            RETURN jsonb_build_object(
                'why', 'money back to MT5 for a dispute: nothing the portal '
                       'stored names it',
                'got', to_jsonb(f),
                'deposit', (SELECT c.deposit_id FROM mt5_credit c
                            WHERE c.provider = p_provider
                              AND c.provider_payment_id = f.original_key
                              AND c.kind = 'deposit'));
        END IF;

        CONTINUE WHEN f.action IS DISTINCT FROM 'paid';

        SELECT * INTO d FROM deposit WHERE reference = f.deposit_ref;
        v_found := FOUND;

        -- the deposit's own credit already: ingest() makes nothing new
        CONTINUE WHEN v_found AND EXISTS (
            SELECT 1 FROM mt5_credit c
            WHERE c.provider = p_provider
              AND c.provider_payment_id = f.payment_key
              AND c.deposit_id = d.id AND c.kind = 'deposit');

        IF NOT v_found
           OR d.provider <> p_provider
           OR d.provider_session_id IS NULL
           OR (d.provider_session_id IS DISTINCT FROM v_object
               AND d.provider_session_id IS DISTINCT FROM f.payment_key)
           OR f.amount_minor IS DISTINCT FROM d.amount_minor
           OR f.currency IS DISTINCT FROM d.currency
        THEN
            RETURN jsonb_build_object(
                'why', 'not the payment the portal stored on the deposit, '
                       'or not its amount and currency',
                'got', jsonb_build_object(
                    'id', v_object,
                    'payment', f.payment_key,
                    'reference', f.deposit_ref,
                    'amount_minor', f.amount_minor::text,
                    'currency', f.currency),
                'expected', CASE WHEN v_found THEN jsonb_build_object(
                    'id', d.provider_session_id,
                    'reference', d.reference,
                    'provider', d.provider,
                    'amount_minor', d.amount_minor::text,
                    'currency', d.currency) END,
                'deposit', CASE WHEN v_found THEN d.id END);
        END IF;
    END LOOP;

    RETURN NULL;
END
$$;


ALTER FUNCTION mt5credit.program_answer_unvouched(p_provider text, p_type text, p_body jsonb) OWNER TO mt5credit_owner;

--
-- Name: program_door_closed(text, text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.program_door_closed(p_provider text, p_door text, p_type text) RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    a         provider_api;
    v_caller  text := coalesce(nullif(current_setting('role'), 'none'),
                               session_user);
BEGIN
    SELECT * INTO a FROM provider_api WHERE provider = p_provider;
    IF NOT FOUND THEN
        RETURN 'no program asks ' || p_provider || '''s API (provider_api)';
    END IF;

    IF NOT pg_has_role(v_caller, a.asked_by, 'MEMBER') THEN
        RETURN v_caller || ' is not ' || a.asked_by || ', which asks '
               || p_provider;
    END IF;

    IF p_door = 'events' AND NOT a.lists_events THEN
        RETURN 'no program reads ' || p_provider || '''s list of events';
    END IF;

    IF p_door = 'query' AND NOT coalesce(p_type = ANY (a.query_types), false)
    THEN
        RETURN 'an answer to a query of ' || p_provider || ' never stands '
               || 'for ' || coalesce('"' || p_type || '"', 'no type');
    END IF;

    RETURN NULL;
END
$$;


ALTER FUNCTION mt5credit.program_door_closed(p_provider text, p_door text, p_type text) OWNER TO mt5credit_owner;

--
-- Name: provider_payload_guard(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.provider_payload_guard() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    IF TG_OP = 'DELETE' OR NEW.payload IS DISTINCT FROM OLD.payload
       OR NEW.provider IS DISTINCT FROM OLD.provider
    THEN
        RAISE EXCEPTION 'provider %: its payload format is fixed once '
                        'chosen; a new format needs a new provider name',
                        OLD.provider
            USING ERRCODE = 'MC013';
    END IF;
    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.provider_payload_guard() OWNER TO mt5credit_owner;

--
-- Name: provider_payload_new(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.provider_payload_new() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_read text := CASE WHEN NEW.provider = 'stripe' THEN 'stripe'
                        ELSE 'generic' END;
BEGIN
    IF NEW.payload <> v_read
       AND EXISTS (SELECT 1 FROM webhook_event
                   WHERE provider = NEW.provider)
    THEN
        RAISE EXCEPTION 'provider %: events were already read as the '
                        '% payload', NEW.provider, v_read
            USING ERRCODE = 'MC013';
    END IF;
    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.provider_payload_new() OWNER TO mt5credit_owner;

--
-- Name: query_answered(text, bigint, text, bytea); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.query_answered(p_provider text, p_deposit bigint, p_type text, p_answer bytea) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    d        deposit;
    o        jsonb;
    v_got    jsonb;
    v_closed text;
    v_why    jsonb;
    v_body   bytea;
    v_out    text;
BEGIN
    SELECT * INTO STRICT d FROM deposit WHERE id = p_deposit;
    IF d.provider <> p_provider THEN
        RAISE EXCEPTION 'deposit % is not a % deposit', d.reference,
                        p_provider USING ERRCODE = 'MC061';
    END IF;
    IF p_type IS NULL THEN
        RETURN 'open';
    END IF;

    BEGIN
        o := convert_from(p_answer, 'UTF8')::jsonb;
    EXCEPTION WHEN others THEN
        o := NULL;
    END;

    v_got := jsonb_build_object(
        'id', o->>'id',
        'reference', coalesce(o->>'client_reference_id',
                              o #>> '{metadata,deposit_id}'),
        'amount_minor', coalesce(o->>'amount_total', o->>'amount_received',
                                 o->>'amount'),
        'currency', upper(o->>'currency'));

    -- 064: a provider this caller's program asks, for a type it asks for
    v_closed := program_door_closed(p_provider, 'query', p_type);

    IF v_closed IS NOT NULL THEN
        v_why := jsonb_build_object('why', v_closed);

    -- 028: the object asked for, about this deposit, for its money
    ELSIF jsonb_typeof(o) IS DISTINCT FROM 'object'
          OR d.provider_session_id IS NULL
          OR v_got->>'id' IS DISTINCT FROM d.provider_session_id
          OR v_got->>'reference' IS DISTINCT FROM d.reference
          OR v_got->>'amount_minor' IS DISTINCT FROM d.amount_minor::text
          OR v_got->>'currency' IS DISTINCT FROM d.currency
    THEN
        v_why := jsonb_build_object('why', 'not the object stored on the '
                                           'deposit, or not its reference, '
                                           'amount or currency');

    -- 064: and what it would credit, as ingest() will read it
    ELSE
        v_why := program_answer_unvouched(p_provider, p_type,
                     jsonb_build_object('type', p_type,
                                        'data', jsonb_build_object('object',
                                                                   o)));
    END IF;

    IF v_why IS NOT NULL THEN
        PERFORM open_case('query_answer_mismatch', 'critical',
                          'query_answer_mismatch:deposit:' || d.id || ':'
                              || encode(sha256(p_answer), 'hex'),
                          jsonb_build_object(
                              'why', v_why->'why',
                              'type', p_type,
                              'got', v_got,
                              'expected', jsonb_build_object(
                                  'id', d.provider_session_id,
                                  'reference', d.reference,
                                  'amount_minor', d.amount_minor::text,
                                  'currency', d.currency),
                              'answer_sha256',
                                  encode(sha256(p_answer), 'hex'),
                              'caller', mt5credit.person()),
                          NULL, d.id, NULL, d.amount_minor, d.currency);
        RETURN 'refused';
    END IF;

    -- the provider's bytes, verbatim, inside an event envelope of ours
    -- (p_type is one of provider_api's query_types: no quote in it)
    v_body := convert_to('{"id": "query:' || d.provider_session_id || ':'
                         || left(encode(sha256(p_answer), 'hex'), 32)
                         || '", "type": "' || p_type
                         || '", "data": {"object": ', 'UTF8')
              || p_answer || convert_to('}}', 'UTF8');

    SELECT outcome INTO v_out
    FROM ingest(p_provider, NULL, v_body, 'api', NULL);
    RETURN v_out;
END
$$;


ALTER FUNCTION mt5credit.query_answered(p_provider text, p_deposit bigint, p_type text, p_answer bytea) OWNER TO mt5credit_owner;

--
-- Name: query_due(text, interval, integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.query_due(p_provider text, p_min_age interval, p_limit integer) RETURNS TABLE(deposit_id bigint, reference text, session_id text, attempts integer)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT d.id, d.reference, d.provider_session_id, d.query_attempts
    FROM deposit d
    WHERE d.provider = p_provider
      AND d.status IN ('created', 'pending')
      AND d.provider_session_id IS NOT NULL
      AND d.query_given_up_at IS NULL
      AND d.created_at <= now() - p_min_age
      AND (d.next_query_at IS NULL OR d.next_query_at <= now())
      AND NOT EXISTS (SELECT 1 FROM mt5_credit c
                      WHERE c.deposit_id = d.id AND c.kind = 'deposit')
    ORDER BY d.next_query_at NULLS FIRST, d.id
    LIMIT p_limit
$$;


ALTER FUNCTION mt5credit.query_due(p_provider text, p_min_age interval, p_limit integer) OWNER TO mt5credit_owner;

--
-- Name: query_record(bigint, text, interval, integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.query_record(p_deposit bigint, p_why text, p_backoff interval, p_max_attempts integer) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    d  deposit;
BEGIN
    UPDATE deposit
    SET query_attempts = query_attempts + 1,
        next_query_at = now() + least(p_backoff * 2 ^ query_attempts,
                                      interval '1 day')
    WHERE id = p_deposit AND query_given_up_at IS NULL
    RETURNING * INTO d;
    IF NOT FOUND THEN
        RETURN 'given_up';
    END IF;

    IF d.query_attempts < p_max_attempts THEN
        RETURN 'scheduled';
    END IF;

    UPDATE deposit SET query_given_up_at = now()
    WHERE id = d.id AND query_given_up_at IS NULL;

    PERFORM open_case('deposit_unconfirmed', 'medium',
        'deposit_unconfirmed:' || d.id,
        jsonb_build_object('deposit', d.reference,
                           'session', d.provider_session_id,
                           'attempts', d.query_attempts,
                           'last', p_why),
        NULL, d.id, NULL, d.amount_minor, d.currency);
    RETURN 'given_up';
END
$$;


ALTER FUNCTION mt5credit.query_record(p_deposit bigint, p_why text, p_backoff interval, p_max_attempts integer) OWNER TO mt5credit_owner;

--
-- Name: recon_begin(text, date, text, text, text, text, text, interval); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.recon_begin(p_provider text, p_day date, p_time_zone text, p_currency text, p_format text, p_settlement_sha256 text, p_control_sha256 text, p_deal_grace interval) RETURNS TABLE(run_id bigint, window_start timestamp with time zone, window_end timestamp with time zone, deal_window_end timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_start  timestamptz;
    v_end    timestamptz;
    v_deals  timestamptz;
    v_id     bigint;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_timezone_names WHERE name = p_time_zone)
    THEN
        RAISE EXCEPTION 'unknown time zone "%"', p_time_zone
            USING ERRCODE = 'MC030';
    END IF;

    v_start := p_day::timestamp AT TIME ZONE p_time_zone;
    v_end := (p_day + 1)::timestamp AT TIME ZONE p_time_zone;
    -- deals cannot be fetched from the future
    v_deals := least(v_end + p_deal_grace, greatest(now(), v_end));

    INSERT INTO recon_run (provider, business_day, time_zone, currency,
                           window_start, window_end, deal_window_end,
                           settlement_format, settlement_sha256,
                           control_sha256, verdict)
    VALUES (p_provider, p_day, p_time_zone, p_currency, v_start, v_end,
            v_deals, p_format, p_settlement_sha256, p_control_sha256,
            'running')
    RETURNING id INTO v_id;

    RETURN QUERY SELECT v_id, v_start, v_end, v_deals;
END
$$;


ALTER FUNCTION mt5credit.recon_begin(p_provider text, p_day date, p_time_zone text, p_currency text, p_format text, p_settlement_sha256 text, p_control_sha256 text, p_deal_grace interval) OWNER TO mt5credit_owner;

--
-- Name: recon_clock(bigint, text, integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.recon_clock(p_run bigint, p_server text, p_offset_now integer) RETURNS TABLE(start_offset integer, start_source text, end_offset integer, end_source text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    r  recon_run;
BEGIN
    r := recon_running(p_run);

    INSERT INTO recon_clock (run_id, mt5_server, offset_s)
    VALUES (p_run, p_server, p_offset_now);

    RETURN QUERY
    SELECT coalesce(a.offset_s, p_offset_now), coalesce(a.source, 'now'),
           coalesce(b.offset_s, p_offset_now), coalesce(b.source, 'now')
    FROM (SELECT 1) one
    LEFT JOIN LATERAL recon_clock_near(p_run, p_server, r.window_start) a
           ON true
    LEFT JOIN LATERAL recon_clock_near(p_run, p_server, r.window_end) b
           ON true;
END
$$;


ALTER FUNCTION mt5credit.recon_clock(p_run bigint, p_server text, p_offset_now integer) OWNER TO mt5credit_owner;

--
-- Name: recon_clock_near(bigint, text, timestamp with time zone); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.recon_clock_near(p_run bigint, p_server text, p_at timestamp with time zone) RETURNS TABLE(offset_s integer, source text)
    LANGUAGE sql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT k.offset_s,
           CASE WHEN k.run_id = p_run THEN 'this run'
                ELSE 'run ' || k.run_id || ' at '
                     || to_char(k.measured_at AT TIME ZONE 'UTC',
                                'YYYY-MM-DD HH24:MI "UTC"') END
    FROM recon_clock k
    JOIN recon_run o ON o.id = k.run_id
    WHERE k.mt5_server = p_server
      AND k.measured_at BETWEEN p_at - interval '18 hours'
                            AND p_at + interval '18 hours'
      AND (k.run_id = p_run OR o.verdict NOT IN ('running', 'incomplete'))
    ORDER BY abs(extract(epoch FROM k.measured_at - p_at)), k.run_id DESC
    LIMIT 1
$$;


ALTER FUNCTION mt5credit.recon_clock_near(p_run bigint, p_server text, p_at timestamp with time zone) OWNER TO mt5credit_owner;

--
-- Name: recon_completeness(bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.recon_completeness(p_run bigint) RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v  record;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM recon_control WHERE run_id = p_run) THEN
        RETURN 'no control totals: the settlement file cannot be shown '
               'complete';
    END IF;

    SELECT s.payout_id, min(s.line_no) AS line_no INTO v
    FROM recon_settlement s
    WHERE s.run_id = p_run
      AND NOT EXISTS (SELECT 1 FROM recon_control c
                      WHERE c.run_id = p_run
                        AND c.payout_id = s.payout_id)
    GROUP BY s.payout_id
    ORDER BY 2 LIMIT 1;
    IF FOUND THEN
        RETURN 'settlement line ' || v.line_no || ': '
               || coalesce('payout "' || v.payout_id || '"',
                           'a row in no payout')
               || ' has no control total';
    END IF;

    SELECT c.payout_id, c.line_no, c.amount_minor, c.row_count,
           coalesce(sum(s.net_minor), 0) AS net, count(s.row_id) AS n
    INTO v
    FROM recon_control c
    LEFT JOIN recon_settlement s
           ON s.run_id = c.run_id AND s.payout_id = c.payout_id
    WHERE c.run_id = p_run
    GROUP BY c.payout_id, c.line_no, c.amount_minor, c.row_count
    HAVING coalesce(sum(s.net_minor), 0) <> c.amount_minor
        OR (c.row_count IS NOT NULL AND count(s.row_id) <> c.row_count)
    ORDER BY c.line_no LIMIT 1;
    IF FOUND THEN
        RETURN 'payout "' || v.payout_id || '" (control line '
               || v.line_no || '): its rows add up to ' || v.net
               || ' minor units in ' || v.n || ' rows, the control total says '
               || v.amount_minor
               || coalesce(' in ' || v.row_count || ' rows', '');
    END IF;

    RETURN NULL;
END
$$;


ALTER FUNCTION mt5credit.recon_completeness(p_run bigint) OWNER TO mt5credit_owner;

--
-- Name: recon_deal_in_zoned(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.recon_deal_in_zoned() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    IF NEW.time_zone IS NOT NULL THEN
        -- the wall-clock reading, taken as the zone's local time
        NEW.deal_epoch := extract(epoch FROM
            timezone(NEW.time_zone, timezone('UTC',
                                             to_timestamp(NEW.server_time))))
            ::bigint;
    END IF;
    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.recon_deal_in_zoned() OWNER TO mt5credit_owner;

--
-- Name: recon_deal_untag(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.recon_deal_untag() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_tag  text := (SELECT tag FROM deployment);
BEGIN
    NEW.mt5_comment := NEW.comment;
    IF v_tag IS NOT NULL AND left(NEW.comment, length(v_tag) + 1)
                             = v_tag || ':'
    THEN
        NEW.comment := substr(NEW.comment, length(v_tag) + 2);
    END IF;
    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.recon_deal_untag() OWNER TO mt5credit_owner;

--
-- Name: recon_digest(bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.recon_digest(p_run bigint) RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    r  recon_run;
BEGIN
    SELECT * INTO STRICT r FROM recon_run WHERE id = p_run;
    RETURN md5(concat_ws('|', r.settlement_sha256, r.control_sha256,
                         r.deals_digest, r.match_window_days,
                         r.settlement_grace_hours,
        (SELECT count(*) || ':' || coalesce(sum(hashtextextended(x, 1)), 0)
                || ':' || coalesce(sum(hashtextextended(x, 2)), 0)
         FROM (SELECT concat_ws(':', 's', m.row_id, m.since_day,
                                m.overdue) AS x
               FROM recon_moved m WHERE m.carried
               UNION ALL
               SELECT concat_ws(':', 'c', c.id, c.since_day)
               FROM recon_scope c WHERE c.carried) h),
        (SELECT count(*) || ':' || coalesce(sum(hashtextextended(x, 1)), 0)
                || ':' || coalesce(sum(hashtextextended(x, 2)), 0)
         FROM (SELECT concat_ws(':', c.id, c.status, c.mt5_deal_ticket,
                                c.payout_status, c.provider_payout_id) AS x
               FROM recon_scope c) h)));
END
$$;


ALTER FUNCTION mt5credit.recon_digest(p_run bigint) OWNER TO mt5credit_owner;

--
-- Name: recon_freshness(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.recon_freshness() RETURNS TABLE(provider text, currency text, last_day date, last_day_start timestamp with time zone, last_success_at timestamp with time zone, last_run_verdict text, last_run_seconds numeric)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    WITH keys AS (
        SELECT DISTINCT r.provider, r.currency FROM recon_run r
    )
    SELECT k.provider, k.currency, ok.business_day, ok.window_start,
           ok.finished_at, last.verdict,
           round(extract(epoch FROM last.finished_at - last.started_at), 3)
    FROM keys k
    LEFT JOIN LATERAL (
        SELECT r.business_day, r.window_start, r.finished_at
        FROM recon_run r
        WHERE r.provider = k.provider AND r.currency = k.currency
          AND r.verdict IN ('reconciled', 'breaks', 'pending')
        ORDER BY r.business_day DESC, r.finished_at DESC
        LIMIT 1) ok ON true
    LEFT JOIN LATERAL (
        SELECT r.verdict, r.started_at, r.finished_at
        FROM recon_run r
        WHERE r.provider = k.provider AND r.currency = k.currency
          AND r.finished_at IS NOT NULL
        ORDER BY r.finished_at DESC, r.id DESC
        LIMIT 1) last ON true
    ORDER BY k.provider, k.currency
$$;


ALTER FUNCTION mt5credit.recon_freshness() OWNER TO mt5credit_owner;

--
-- Name: recon_incomplete(text, date, text, text, text, text, text, interval, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.recon_incomplete(p_provider text, p_day date, p_time_zone text, p_currency text, p_format text, p_settlement_sha256 text, p_control_sha256 text, p_deal_grace interval, p_reason text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_id  bigint;
BEGIN
    SELECT run_id INTO v_id
    FROM recon_begin(p_provider, p_day, p_time_zone, p_currency, p_format,
                     p_settlement_sha256, p_control_sha256, p_deal_grace);
    UPDATE recon_run
    SET verdict = 'incomplete', reason = p_reason, finished_at = now()
    WHERE id = v_id AND verdict = 'running';
    RETURN v_id;
END
$$;


ALTER FUNCTION mt5credit.recon_incomplete(p_provider text, p_day date, p_time_zone text, p_currency text, p_format text, p_settlement_sha256 text, p_control_sha256 text, p_deal_grace interval, p_reason text) OWNER TO mt5credit_owner;

--
-- Name: recon_legs(bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.recon_legs(p_run bigint) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    r  recon_run;
BEGIN
    SELECT * INTO STRICT r FROM recon_run WHERE id = p_run;

    -- a refund row names the leg, not the debit: bring the debit in; and
    -- a debit of the day with a leg of this provider is this run's too,
    -- whichever provider pays its payout leg
    INSERT INTO recon_scope
    SELECT c.*, NULL::text, po.status, po.provider_payout_id, po.reference,
           (c.created_at AT TIME ZONE r.time_zone)::date, p_run, false
    FROM mt5_credit c
    LEFT JOIN payout po ON po.debit_credit_id = c.id
    WHERE c.id IN (SELECT c2.id
                   FROM mt5_credit c2
                   JOIN withdrawal w2 ON w2.id = c2.withdrawal_id
                   JOIN withdrawal_leg l2 ON l2.withdrawal_id = w2.id
                                         AND l2.plan_no = w2.plan_no
                   WHERE c2.kind = 'withdrawal'
                     AND c2.created_at >= r.window_start
                     AND c2.created_at < r.window_end
                     AND l2.provider = r.provider
                     AND l2.currency = r.currency
                   UNION
                   SELECT wr.debit_credit_id
                   FROM withdrawal_refund wr
                   JOIN recon_moved m ON m.provider_key = wr.provider_refund_id
                   WHERE m.category = 'refund' AND wr.provider = r.provider
                   UNION
                   -- the generic file's key (sql/019): "refund:<id>"
                   SELECT wr.debit_credit_id
                   FROM withdrawal_refund wr
                   JOIN recon_moved m
                     ON m.provider_key = 'refund:' || wr.provider_refund_id
                   WHERE m.category = 'refund' AND wr.provider = r.provider)
      AND NOT EXISTS (SELECT 1 FROM recon_scope s WHERE s.id = c.id);

    -- the planned debits in scope (a payout made for the whole amount
    -- before 043 leaves its withdrawal to the old matching): settled by
    -- their legs, never by a row of their own
    CREATE TEMP TABLE recon_leg_planned ON COMMIT DROP AS
    SELECT c.id AS credit_id, w.id AS withdrawal_id, w.plan_no
    FROM recon_scope c
    JOIN withdrawal w ON w.id = c.withdrawal_id AND w.plan_no IS NOT NULL
    WHERE c.kind = 'withdrawal'
      AND NOT EXISTS (SELECT 1 FROM payout p0
                      WHERE p0.withdrawal_id = w.id AND p0.plan_no IS NULL);

    -- their legs that this provider moves in this currency: the others
    -- are another run's (a refund at the card's provider, the payout at
    -- the bank's)
    CREATE TEMP TABLE recon_leg_base ON COMMIT DROP AS
    SELECT c.id AS credit_id, c.reference, c.provider_payment_id AS c_key,
           l.leg, l.kind, l.amount_minor, l.currency,
           coalesce(wr.status, po.status) AS status,
           coalesce(wr.provider_refund_id, po.provider_payout_id)
               AS provider_id
    FROM recon_leg_planned pl
    JOIN recon_scope c ON c.id = pl.credit_id
    JOIN withdrawal_leg l ON l.withdrawal_id = pl.withdrawal_id
                         AND l.plan_no = pl.plan_no
    LEFT JOIN withdrawal_refund wr
           ON wr.withdrawal_id = pl.withdrawal_id AND wr.leg = l.leg
    LEFT JOIN payout po ON po.withdrawal_id = pl.withdrawal_id
                       AND po.leg = l.leg
    WHERE l.provider = r.provider AND l.currency = r.currency;

    CREATE TEMP TABLE recon_leg_row ON COMMIT DROP AS
    SELECT b.credit_id, b.leg, m.row_id
    FROM recon_leg_base b
    JOIN recon_moved m ON m.provider_key = b.provider_id
    WHERE b.kind = 'refund' AND m.category = 'refund'
    UNION
    SELECT b.credit_id, b.leg, m.row_id
    FROM recon_leg_base b
    JOIN recon_moved m ON m.provider_key = 'refund:' || b.provider_id
    WHERE b.kind = 'refund' AND m.category = 'refund'
    UNION
    SELECT b.credit_id, b.leg, m.row_id
    FROM recon_leg_base b
    JOIN recon_moved m ON m.provider_key = b.c_key
    WHERE b.kind = 'payout' AND m.category = 'withdrawal';

    CREATE TEMP TABLE recon_leg ON COMMIT DROP AS
    SELECT b.*, m.row_id, m.provider_key AS s_key, m.gross_minor,
           m.currency AS s_currency, m.payment_id AS s_payment_id,
           m.created_at AS s_at, m.since_day AS s_day,
           m.first_run_id AS s_first_run,
           (SELECT count(*) FROM recon_leg_row x
            WHERE x.credit_id = b.credit_id AND x.leg = b.leg) AS n_rows
    FROM recon_leg_base b
    LEFT JOIN LATERAL (
        SELECT m.* FROM recon_leg_row lr
        JOIN recon_moved m ON m.row_id = lr.row_id
        WHERE lr.credit_id = b.credit_id AND lr.leg = b.leg
        ORDER BY m.since_day, m.row_id
        LIMIT 1) m ON true;
    ANALYZE recon_leg;
END
$$;


ALTER FUNCTION mt5credit.recon_legs(p_run bigint) OWNER TO mt5credit_owner;

--
-- Name: recon_load_deals(bigint, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.recon_load_deals(p_run bigint, p_deals_digest text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    SET work_mem TO '32MB'
    SET jit TO 'off'
    AS $$
DECLARE
    r       recon_run;
    v_bad   record;
    v_why   text;
    v_twice boolean;
    v_tag   text := (SELECT tag FROM deployment);
BEGIN
    r := recon_running(p_run);

    UPDATE recon_run
    SET deals_digest = CASE WHEN deals_digest IS NULL THEN p_deals_digest
                            ELSE md5(deals_digest || p_deals_digest) END
    WHERE id = p_run;

    -- the same deal twice (overlapping pages) is one deal; the same ticket
    -- with other content is a source that contradicts itself
    SELECT mt5_server, deal_ticket,
           count(DISTINCT (mt5_login, amount_minor, currency, comment,
                           deal_epoch)) > 1 AS differs
    INTO v_bad
    FROM recon_deal_in
    WHERE run_id = p_run
    GROUP BY mt5_server, deal_ticket
    HAVING count(*) > 1
    ORDER BY 3 DESC LIMIT 1;
    v_twice := FOUND;
    IF v_twice AND v_bad.differs THEN
        v_why := 'MT5 server ' || v_bad.mt5_server || ' returned deal '
                 || v_bad.deal_ticket || ' twice with different content';
    END IF;

    SELECT mt5_server, currency INTO v_bad FROM recon_deal_in i
    WHERE run_id = p_run
      AND NOT EXISTS (SELECT 1 FROM currency c WHERE c.code = i.currency)
    LIMIT 1;
    IF FOUND AND v_why IS NULL THEN
        v_why := 'MT5 server ' || v_bad.mt5_server || ': a group in '
                 || 'currency "' || v_bad.currency || '", unknown here';
    END IF;

    -- a ticket is asked for only when the window's fetch lacks it
    -- (recon_tickets()), and the job checks every answer was asked for.
    -- The comment without this deployment's tag, and a zoned server's
    -- deal time, are worked out here for the whole set: 036's and 038's
    -- row triggers did the same a row at a time, most of a load's cost
    WITH staged AS (
        -- the same deal twice (overlapping pages) is kept once; without
        -- duplicates, no sort of a million rows
        SELECT * FROM (SELECT DISTINCT ON (mt5_server, deal_ticket) *
                       FROM recon_deal_in
                       WHERE run_id = p_run AND v_twice
                       ORDER BY mt5_server, deal_ticket) d
        UNION ALL
        SELECT * FROM recon_deal_in WHERE run_id = p_run AND NOT v_twice
    )
    INSERT INTO recon_deal (run_id, mt5_server, deal_ticket, mt5_login,
                            amount_minor, currency, comment, mt5_comment,
                            deal_time, fetched_by)
    SELECT i.run_id, i.mt5_server, i.deal_ticket, i.mt5_login,
           i.amount_minor, i.currency,
           CASE WHEN v_tag IS NOT NULL
                     AND left(i.comment, length(v_tag) + 1) = v_tag || ':'
                THEN substr(i.comment, length(v_tag) + 2)
                ELSE i.comment END,
           i.comment,
           CASE WHEN i.time_zone IS NULL THEN to_timestamp(i.deal_epoch)
                -- the wall-clock reading, taken as the zone's local time
                ELSE timezone(i.time_zone,
                              timezone('UTC', to_timestamp(i.server_time)))
                END,
           CASE WHEN i.by_ticket THEN 'ticket' ELSE 'window' END
    FROM staged i;

    DELETE FROM recon_deal_in WHERE run_id = p_run;
    ANALYZE recon_deal;

    RETURN v_why;
END
$$;


ALTER FUNCTION mt5credit.recon_load_deals(p_run bigint, p_deals_digest text) OWNER TO mt5credit_owner;

--
-- Name: recon_load_settlement(bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.recon_load_settlement(p_run bigint) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    SET work_mem TO '32MB'
    SET jit TO 'off'
    AS $$
DECLARE
    r       recon_run;
    v_bad   record;
BEGIN
    r := recon_running(p_run);

    SELECT min(line_no) AS first, max(line_no) AS second, row_id INTO v_bad
    FROM recon_settlement_in WHERE run_id = p_run
    GROUP BY row_id HAVING count(*) > 1
    ORDER BY min(line_no) LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'settlement lines % and %: the same row id "%"',
                        v_bad.first, v_bad.second, v_bad.row_id
            USING ERRCODE = 'MC032';
    END IF;

    SELECT line_no, currency INTO v_bad FROM recon_settlement_in i
    WHERE run_id = p_run
      AND NOT EXISTS (SELECT 1 FROM currency c WHERE c.code = i.currency)
    ORDER BY line_no LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'settlement line %: unknown currency "%"',
                        v_bad.line_no, v_bad.currency
            USING ERRCODE = 'MC032';
    END IF;

    INSERT INTO recon_settlement (run_id, row_id, line_no, category,
                                  provider_key, payment_id, deposit_ref,
                                  currency, gross_minor, fee_minor, net_minor,
                                  created_at, payout_id)
    SELECT run_id, row_id, line_no, category, nullif(provider_key, ''),
           nullif(payment_id, ''), nullif(deposit_ref, ''), currency,
           gross_minor, fee_minor, net_minor,
           created_text::timestamp AT TIME ZONE
               CASE WHEN created_utc THEN 'UTC' ELSE r.time_zone END,
           nullif(payout_id, '')
    FROM recon_settlement_in WHERE run_id = p_run;

    SELECT line_no, created_at INTO v_bad FROM recon_settlement
    WHERE run_id = p_run
      AND (created_at < r.window_start OR created_at >= r.window_end)
    ORDER BY line_no LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'settlement line %: created % is outside the '
                        'business day % (%)', v_bad.line_no,
                        v_bad.created_at AT TIME ZONE r.time_zone,
                        r.business_day, r.time_zone
            USING ERRCODE = 'MC033';
    END IF;

    SELECT min(line_no) AS first, max(line_no) AS second, payout_id INTO v_bad
    FROM recon_control_in WHERE run_id = p_run
    GROUP BY payout_id HAVING count(*) > 1 LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'control lines % and %: payout "%" twice',
                        v_bad.first, v_bad.second, v_bad.payout_id
            USING ERRCODE = 'MC032';
    END IF;

    INSERT INTO recon_control (run_id, payout_id, line_no, currency,
                               amount_minor, row_count)
    SELECT run_id, payout_id, line_no, currency, amount_minor, row_count
    FROM recon_control_in WHERE run_id = p_run;

    -- the planner must know a day's rows are here (autovacuum comes later)
    ANALYZE recon_settlement;

    DELETE FROM recon_settlement_in WHERE run_id = p_run;
    DELETE FROM recon_control_in WHERE run_id = p_run;

    RETURN recon_completeness(p_run);
END
$$;


ALTER FUNCTION mt5credit.recon_load_settlement(p_run bigint) OWNER TO mt5credit_owner;

--
-- Name: recon_match(bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.recon_match(p_run bigint) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    SET work_mem TO '32MB'
    SET jit TO 'off'
    AS $_$
DECLARE
    r          recon_run;
    v_prev     recon_run;
    v_digest   text;
    v_verdict  text;
    v_window   integer;
    v_grace    interval;
    -- references may be lowercase base32 (066); digits still match
    v_refpat   constant text := '^(dep|rfd|cbk|cbr|cor|wd):[0-9a-z]+$';
BEGIN
    PERFORM recon_prepare(p_run);
    SELECT * INTO STRICT r FROM recon_run WHERE id = p_run FOR UPDATE;
    v_window := r.match_window_days;
    v_grace := make_interval(hours => r.settlement_grace_hours);

    PERFORM recon_legs(p_run);

    -- the legs' states are inputs too: a leg that failed since is a
    -- changed input
    v_digest := md5(recon_digest(p_run) || '|' || coalesce(
        (SELECT string_agg(concat_ws(':', l.credit_id, l.leg, l.status,
                                     l.provider_id),
                           ',' ORDER BY l.credit_id, l.leg)
         FROM recon_leg l), ''));
    SELECT * INTO v_prev FROM recon_run
    WHERE provider = r.provider AND business_day = r.business_day
      AND currency = r.currency AND id < p_run
      AND verdict NOT IN ('running', 'incomplete')
    ORDER BY id DESC LIMIT 1;
    IF FOUND AND v_prev.input_digest = v_digest THEN
        RETURN 'unchanged:' || v_prev.id;
    END IF;

    -- refunds the file names otherwise than the webhook did (Stripe's
    -- cumulative amount_refunded): unpaired refund rows and unpaired
    -- refund credits, carried ones included, meet by original payment and
    -- amount, oldest first, one to one
    CREATE TEMP TABLE recon_refund_pair ON COMMIT DROP AS
    WITH s AS (
        SELECT m.row_id, m.payment_id, -m.gross_minor AS amount,
               row_number() OVER (PARTITION BY m.payment_id, m.gross_minor
                                  ORDER BY m.since_day, m.created_at,
                                           m.row_id) AS rn
        FROM recon_moved m
        WHERE m.category = 'refund'
          AND NOT EXISTS (SELECT 1 FROM recon_scope c
                          WHERE c.provider_payment_id = m.provider_key)
          AND NOT EXISTS (SELECT 1 FROM recon_leg_row lr
                          WHERE lr.row_id = m.row_id)
    ), c AS (
        SELECT c.provider_payment_id, c.original_key,
               c.paid_amount_minor AS amount,
               row_number() OVER (PARTITION BY c.original_key,
                                               c.paid_amount_minor
                                  ORDER BY c.since_day, c.id) AS rn
        FROM recon_scope c
        WHERE c.kind = 'refund'
          AND NOT EXISTS (SELECT 1 FROM recon_moved m
                          WHERE m.provider_key = c.provider_payment_id)
    )
    SELECT s.row_id, c.provider_payment_id AS credit_key
    FROM s JOIN c ON c.original_key = s.payment_id AND c.amount = s.amount
                 AND c.rn = s.rn;

    -- every deal with a credit's reference, weighed against that credit:
    -- how many, and whether any is on another login, of another amount
    -- or currency (each is its own finding)
    CREATE TEMP TABLE recon_ref ON COMMIT DROP AS
    SELECT c.reference, count(*) AS n,
           bool_or(d.mt5_login <> c.mt5_login
                   OR d.mt5_server <> c.mt5_server) AS wrong_login,
           bool_or(d.amount_minor <> CASE c.direction WHEN 'credit'
                                         THEN c.amount_minor
                                         ELSE -c.amount_minor END)
               AS wrong_amount,
           bool_or(d.currency <> c.currency) AS wrong_currency
    FROM recon_scope c
    JOIN recon_deal d ON d.run_id = p_run AND d.comment = c.reference
    GROUP BY c.reference;
    ANALYZE recon_ref;

    -- one row per movement: its settlement row, its credit, its deals.
    -- pair_key names it in items and cases: the credit's reference, or
    -- the settlement row when there is no credit (or, rarely, when two
    -- rows name one credit)
    CREATE TEMP TABLE recon_pair ON COMMIT DROP AS
    SELECT s.row_id, s.category, s.provider_key AS s_key, s.payment_id,
           s.gross_minor, s.currency AS s_currency, s.created_at AS s_at,
           s.since_day AS s_day, s.carried AS s_carried,
           s.first_run_id AS s_first_run, s.overdue AS s_overdue,
           c.id AS credit_id, c.kind, c.direction, c.reference, c.status,
           c.mt5_server, c.mt5_login, c.amount_minor, c.currency,
           c.paid_amount_minor, c.paid_currency, c.deposit_id,
           c.original_key, c.provider_payment_id, c.payout_status,
           c.provider_payout_id,
           c.since_day AS c_day, c.carried AS c_carried,
           c.first_run_id AS c_first_run,
           coalesce(s.category,
                    CASE WHEN c.kind = 'deposit' THEN 'payment'
                         WHEN c.kind = 'refund' THEN 'refund'
                         WHEN c.kind = 'correction' THEN 'correction'
                         WHEN c.kind = 'withdrawal' THEN 'withdrawal'
                         WHEN c.direction = 'debit' THEN 'chargeback'
                         ELSE 'chargeback_reversal' END) AS movement,
           CASE WHEN c.reference IS NULL THEN 'settlement:' || s.row_id
                WHEN t.provider_key IS NOT NULL
                THEN c.reference || '/' || s.row_id
                ELSE c.reference END AS pair_key,
           coalesce(d.n, 0) AS n_deals,
           coalesce(d.wrong_login, false) AS d_wrong_login,
           coalesce(d.wrong_amount, false) AS d_wrong_amount,
           coalesce(d.wrong_currency, false) AS d_wrong_currency,
           -- in transit: unpaired, its day inside the window, and a
           -- settlement row only for its grace (its credit comes first)
           -- and never again once reported
           CASE WHEN c.id IS NULL THEN
                    NOT s.overdue
                    AND r.business_day - s.since_day < v_window
                    AND s.created_at + v_grace > r.window_end
                WHEN s.row_id IS NULL THEN
                    c.kind <> 'correction'
                    AND r.business_day - c.since_day < v_window
                ELSE false END AS in_transit,
           -- overdue: a settlement row past its grace with no credit, a
           -- break (reported by the run that finds it so), carried inside
           -- the window so that a late credit still pairs with it
           c.id IS NULL AND r.business_day - s.since_day < v_window
           AND (s.overdue OR s.created_at + v_grace <= r.window_end)
               AS overdue
    FROM (SELECT m.*, coalesce(x.credit_key, m.provider_key) AS join_key
          FROM recon_moved m
          LEFT JOIN recon_refund_pair x ON x.row_id = m.row_id
          WHERE NOT EXISTS (SELECT 1 FROM recon_leg_row lr
                            WHERE lr.row_id = m.row_id)) s
    FULL JOIN (SELECT * FROM recon_scope
               WHERE id NOT IN (SELECT credit_id FROM recon_leg_planned)) c
           ON c.provider_payment_id = s.join_key
    LEFT JOIN recon_ref d ON d.reference = c.reference
    LEFT JOIN (SELECT provider_key FROM recon_moved
               GROUP BY provider_key HAVING count(*) > 1) t
           ON t.provider_key = s.join_key;

    -- a planned withdrawal's debit, one movement: settled when every leg
    -- has its row (the leg rows' checks are the leg findings below); the
    -- payout checks of 019 are the legs' own, so they are passed here
    INSERT INTO recon_pair
    SELECT CASE WHEN g.settled THEN g.row_id END,
           CASE WHEN g.settled THEN 'withdrawal' END, g.s_key, NULL,
           CASE WHEN g.settled THEN -c.paid_amount_minor END,
           CASE WHEN g.settled THEN c.paid_currency END, g.s_at, g.s_day,
           false, g.s_first_run, false,
           c.id, c.kind, c.direction, c.reference, c.status, c.mt5_server,
           c.mt5_login, c.amount_minor, c.currency, c.paid_amount_minor,
           c.paid_currency, c.deposit_id, c.original_key,
           c.provider_payment_id, 'paid', NULL,
           c.since_day, c.carried, c.first_run_id, 'withdrawal',
           c.reference,
           coalesce(d.n, 0), coalesce(d.wrong_login, false),
           coalesce(d.wrong_amount, false), coalesce(d.wrong_currency, false),
           NOT g.settled AND r.business_day - c.since_day < v_window, false
    FROM (SELECT l.credit_id, bool_and(l.row_id IS NOT NULL) AS settled,
                 min(l.row_id) AS row_id, min(l.s_key) AS s_key,
                 max(l.s_at) AS s_at, min(l.s_day) AS s_day,
                 min(l.s_first_run) AS s_first_run
          FROM recon_leg l GROUP BY l.credit_id) g
    JOIN recon_scope c ON c.id = g.credit_id
    LEFT JOIN recon_ref d ON d.reference = c.reference;
    ANALYZE recon_pair;

    -- the findings: (kind, key, severity, movement, pair) per difference;
    -- a movement where all three agree is passed over in one test
    CREATE TEMP TABLE recon_found (
        kind         text NOT NULL,
        item_key     text NOT NULL,
        severity     text NOT NULL,
        movement     text NOT NULL,
        pair_key     text,
        deal_server  text,
        deal_ticket  bigint
    ) ON COMMIT DROP;

    INSERT INTO recon_found
    SELECT k.kind, p.pair_key, k.severity, p.movement, p.pair_key
    FROM recon_pair p
    CROSS JOIN LATERAL (VALUES
        -- a row whose credit failed is a break at once: MT5 refused it;
        -- a row with none, once past its grace, by the run that finds it
        -- so (an overdue row carried from an earlier run was reported)
        ('settled_not_credited', 'high',
         p.row_id IS NOT NULL
         AND p.movement IN ('payment', 'chargeback_reversal')
         AND ((p.credit_id IS NULL AND NOT p.in_transit
               AND NOT p.s_overdue)
              OR p.status = 'failed')),
        ('settled_not_debited', 'high',
         p.row_id IS NOT NULL
         AND p.movement IN ('refund', 'chargeback', 'withdrawal')
         AND ((p.credit_id IS NULL AND NOT p.in_transit
               AND NOT p.s_overdue)
              OR p.status = 'failed')),
        ('credited_not_settled', 'high',
         p.row_id IS NULL AND p.direction = 'credit'
         AND p.kind <> 'correction' AND p.status = 'done'
         AND NOT p.in_transit),
        ('debited_not_settled', 'high',
         p.row_id IS NULL AND p.direction = 'debit'
         AND p.kind <> 'correction' AND p.status = 'done'
         AND NOT p.in_transit),
        ('credit_without_deal', 'critical',
         p.status = 'done' AND p.n_deals = 0),
        ('deal_duplicate', 'critical', p.n_deals >= 2),
        ('amount_mismatch', 'high',
         (p.row_id IS NOT NULL AND p.credit_id IS NOT NULL
          AND abs(p.gross_minor) <> p.paid_amount_minor)
         OR p.d_wrong_amount),
        ('currency_mismatch', 'high',
         (p.row_id IS NOT NULL AND p.credit_id IS NOT NULL
          AND p.s_currency <> p.paid_currency)
         OR p.d_wrong_currency),
        ('login_mismatch', 'critical', p.d_wrong_login),
        -- a payout: the provider's record of it and ours must agree too
        ('payout_state_mismatch', 'high',
         p.row_id IS NOT NULL AND p.kind = 'withdrawal'
         AND p.status = 'done'
         AND p.payout_status IS DISTINCT FROM 'paid'
         AND p.payout_status IS DISTINCT FROM 'accepted'),
        ('payout_id_mismatch', 'critical',
         p.row_id IS NOT NULL AND p.kind = 'withdrawal'
         AND p.provider_payout_id IS NOT NULL
         AND p.payment_id IS DISTINCT FROM p.provider_payout_id),
        -- held (087): two people decide it; in flight until they do
        ('open_at_cutoff',
         CASE WHEN p.status = 'unknown' THEN 'high' ELSE 'medium' END,
         p.status IN ('pending', 'claimed', 'unknown', 'held'))
    ) AS k (kind, severity, hit)
    WHERE NOT coalesce(p.row_id IS NOT NULL AND p.status = 'done'
               AND p.n_deals = 1
               AND abs(p.gross_minor) = p.paid_amount_minor
               AND p.s_currency = p.paid_currency
               AND NOT p.d_wrong_amount AND NOT p.d_wrong_currency
               AND NOT p.d_wrong_login
               AND (p.kind <> 'withdrawal'
                    OR (p.payout_status IN ('accepted', 'paid')
                        AND p.payment_id = p.provider_payout_id)),
               false)
      AND k.hit;

    -- deals of the day that no credit in scope explains (one hash
    -- anti-join), then of these: no credit's at all, or a credit's that
    -- is not that credit's own deal (a second deal for a credit of
    -- another day), or its own deal, moved
    INSERT INTO recon_found
    WITH unexplained AS MATERIALIZED (
        SELECT d.mt5_server, d.deal_ticket, d.comment, d.mt5_login,
               d.amount_minor
        FROM recon_deal d
        WHERE d.run_id = p_run AND d.fetched_by = 'window'
          AND d.deal_time >= r.window_start AND d.deal_time < r.window_end
          AND NOT EXISTS (SELECT 1 FROM recon_pair p
                          WHERE p.reference = d.comment)
    )
    SELECT k.kind, 'deal:' || u.mt5_server || ':' || u.deal_ticket,
           k.severity, 'unattributed', NULL, u.mt5_server, u.deal_ticket
    FROM unexplained u
    LEFT JOIN mt5_credit c ON u.comment ~ v_refpat
                          AND c.reference = u.comment
    CROSS JOIN LATERAL (VALUES
        ('deal_without_reference', 'medium', u.comment !~ v_refpat),
        ('deal_unknown_reference', 'critical',
         u.comment ~ v_refpat AND c.id IS NULL),
        ('deal_duplicate', 'critical',
         c.id IS NOT NULL
         AND (c.mt5_deal_ticket IS DISTINCT FROM u.deal_ticket
              OR c.mt5_server <> u.mt5_server)),
        ('login_mismatch', 'critical',
         c.id IS NOT NULL AND c.mt5_deal_ticket = u.deal_ticket
         AND c.mt5_server = u.mt5_server AND c.mt5_login <> u.mt5_login),
        ('amount_mismatch', 'high',
         c.id IS NOT NULL AND c.mt5_deal_ticket = u.deal_ticket
         AND c.mt5_server = u.mt5_server
         AND u.amount_minor <> CASE c.direction WHEN 'credit'
                                   THEN c.amount_minor
                                   ELSE -c.amount_minor END)
    ) AS k (kind, severity, hit)
    WHERE k.hit;

    -- each leg against its row: the amount and currency the provider
    -- moved, and our record of the leg having gone out (a row for a leg
    -- we hold failed, or never sent; two rows for one leg; a payout paid
    -- under another id)
    -- (the payout leg's own kinds are 019's, on the withdrawal's key)
    INSERT INTO recon_found
    SELECT k.kind,
           l.reference || CASE WHEN l.kind = 'payout' THEN ''
                               ELSE '/leg' || l.leg END,
           k.severity, 'withdrawal', l.reference
    FROM recon_leg l
    CROSS JOIN LATERAL (VALUES
        ('amount_mismatch', 'high',
         l.row_id IS NOT NULL AND abs(l.gross_minor) <> l.amount_minor),
        ('currency_mismatch', 'high',
         l.row_id IS NOT NULL AND l.s_currency <> l.currency),
        ('leg_state_mismatch', 'high',
         l.row_id IS NOT NULL
         AND (l.n_rows > 1
              OR (l.kind = 'refund'
                  AND l.status IS DISTINCT FROM 'accepted'
                  AND l.status IS DISTINCT FROM 'succeeded'))),
        ('payout_state_mismatch', 'high',
         l.row_id IS NOT NULL AND l.kind = 'payout'
         AND l.status IS DISTINCT FROM 'accepted'
         AND l.status IS DISTINCT FROM 'paid'),
        ('payout_id_mismatch', 'critical',
         l.row_id IS NOT NULL AND l.kind = 'payout'
         AND l.provider_id IS NOT NULL
         AND l.s_payment_id IS DISTINCT FROM l.provider_id)
    ) AS k (kind, severity, hit)
    WHERE k.hit;

    ANALYZE recon_found;

    PERFORM recon_record_items(p_run);

    -- what stays in transit (and what is overdue), for the next run to
    -- start from
    INSERT INTO recon_transit_settlement (run_id, settlement_run_id,
        since_day, first_run_id, age_days, row_id, line_no, category,
        provider_key, payment_id, deposit_ref, currency, gross_minor,
        fee_minor, net_minor, created_at, payout_id, overdue)
    SELECT p_run, s.run_id, s.since_day, s.first_run_id,
           r.business_day - s.since_day, s.row_id, s.line_no, s.category,
           s.provider_key, s.payment_id, s.deposit_ref, s.currency,
           s.gross_minor, s.fee_minor, s.net_minor, s.created_at,
           s.payout_id, p.overdue
    FROM recon_pair p
    JOIN recon_moved s ON s.row_id = p.row_id
    WHERE (p.in_transit OR p.overdue) AND p.credit_id IS NULL
    UNION ALL
    SELECT p_run, s.run_id, s.since_day, s.first_run_id,
           r.business_day - s.since_day, s.row_id, s.line_no, s.category,
           s.provider_key, s.payment_id, s.deposit_ref, s.currency,
           s.gross_minor, s.fee_minor, s.net_minor, s.created_at,
           s.payout_id, false
    FROM recon_pair p
    JOIN recon_leg_row lr ON lr.credit_id = p.credit_id
    JOIN recon_moved s ON s.row_id = lr.row_id
    WHERE p.in_transit AND p.kind = 'withdrawal' AND p.row_id IS NULL;

    INSERT INTO recon_transit_credit
    SELECT p_run, p.credit_id, p.c_day, p.c_first_run,
           r.business_day - p.c_day, p.movement, p.reference, p.status,
           p.amount_minor, p.currency
    FROM recon_pair p
    WHERE p.in_transit AND p.row_id IS NULL;

    -- a credit of a later day, paired now: not its own day's to pair
    INSERT INTO recon_paired_ahead (run_id, credit_id, pair_key)
    SELECT p_run, p.credit_id, p.pair_key
    FROM recon_pair p
    WHERE p.row_id IS NOT NULL AND p.credit_id IS NOT NULL
      AND p.c_day > r.business_day;

    -- what an earlier run carried and this one paired
    INSERT INTO recon_matched_later (run_id, side, item_key, since_day,
                                     first_run_id, pair_key)
    SELECT p_run, 'settlement', p.row_id, p.s_day, p.s_first_run,
           p.pair_key
    FROM recon_pair p
    WHERE p.s_carried AND p.credit_id IS NOT NULL
    UNION ALL
    SELECT p_run, 'credit', p.reference, p.c_day, p.c_first_run, p.pair_key
    FROM recon_pair p
    WHERE p.c_carried AND p.row_id IS NOT NULL;

    PERFORM recon_record_counts(p_run, v_prev.id);

    -- the rows past their grace still awaited (each one's case is open)
    INSERT INTO recon_count (run_id, dimension, name, n)
    SELECT p_run, 'summary', 'overdue', count(*)
    FROM recon_pair WHERE overdue;

    v_verdict := CASE
        WHEN EXISTS (SELECT 1 FROM recon_found
                     WHERE kind <> 'open_at_cutoff') THEN 'breaks'
        -- in transit is no break and nothing in flight: a timing
        -- difference, carried to the next run (an overdue row was a
        -- break on the run that found it so; its case holds it)
        WHEN EXISTS (SELECT 1 FROM recon_found) THEN 'pending'
        ELSE 'reconciled' END;

    UPDATE recon_run
    SET verdict = v_verdict, input_digest = v_digest, finished_at = now(),
        previous_run_id = v_prev.id
    WHERE id = p_run AND verdict = 'running';
    IF NOT FOUND THEN
        RAISE EXCEPTION 'run % was finished by someone else', p_run
            USING ERRCODE = 'MC031';
    END IF;

    RETURN v_verdict;
END
$_$;


ALTER FUNCTION mt5credit.recon_match(p_run bigint) OWNER TO mt5credit_owner;

--
-- Name: recon_prepare(bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.recon_prepare(p_run bigint) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    SET work_mem TO '32MB'
    SET jit TO 'off'
    AS $$
DECLARE
    r       recon_run;
    v_src   recon_run;
    v_from  timestamptz;
    v       record;
BEGIN
    IF to_regclass('pg_temp.recon_prepared') IS NOT NULL THEN
        IF EXISTS (SELECT 1 FROM pg_temp.recon_prepared
                   WHERE run_id = p_run)
        THEN
            RETURN;
        END IF;
        RAISE EXCEPTION 'another run was prepared in this transaction'
            USING ERRCODE = 'MC031';
    END IF;

    r := recon_running(p_run);

    -- the items in transit: the last finished run of an earlier day
    SELECT * INTO v_src FROM recon_run o
    WHERE o.provider = r.provider AND o.currency = r.currency
      AND o.business_day BETWEEN r.business_day - r.match_window_days - 1
                             AND r.business_day - 1
      AND o.verdict NOT IN ('running', 'incomplete')
    ORDER BY o.business_day DESC, o.id DESC
    LIMIT 1;

    UPDATE recon_run SET carried_from_run_id = v_src.id
    WHERE id = p_run AND verdict = 'running';

    -- credits made on days no run looked at are this run's too
    v_from := r.window_start;
    IF v_src.id IS NOT NULL AND v_src.window_end < v_from THEN
        v_from := greatest(v_src.window_end,
                           r.window_start
                           - make_interval(days => r.match_window_days));
    END IF;

    CREATE TEMP TABLE recon_prepared ON COMMIT DROP AS
    SELECT p_run AS run_id, v_src.id AS source_run_id;

    CREATE TEMP TABLE recon_moved ON COMMIT DROP AS
    SELECT s.*, r.business_day AS since_day, p_run AS first_run_id,
           false AS carried, false AS overdue
    FROM recon_settlement s
    WHERE s.run_id = p_run
      AND s.category IN ('payment', 'refund', 'chargeback',
                         'chargeback_reversal', 'withdrawal');

    INSERT INTO recon_moved
    SELECT t.settlement_run_id, t.row_id, t.line_no, t.category,
           t.provider_key, t.payment_id, t.deposit_ref, t.currency,
           t.gross_minor, t.fee_minor, t.net_minor, t.created_at,
           t.payout_id, t.since_day, t.first_run_id, true, t.overdue
    FROM recon_transit_settlement t
    WHERE t.run_id = v_src.id
      -- a row the day's own file lists again is the day's
      AND NOT EXISTS (SELECT 1 FROM recon_settlement s
                      WHERE s.run_id = p_run AND s.row_id = t.row_id);
    ANALYZE recon_moved;

    -- the one automatic fix: replay what the provider already signed
    FOR v IN
        SELECT DISTINCT ON (m.row_id) m.row_id, m.provider_key,
               k.webhook_event_id
        FROM mt5credit.case k
        JOIN webhook_event e ON e.id = k.webhook_event_id
                            AND e.provider = r.provider
        JOIN recon_moved m ON m.provider_key
                              = k.details->'facts'->>'payment_key'
        WHERE k.status <> 'resolved'
          AND k.details->'facts'->>'payment_key' IS NOT NULL
          AND m.category = 'payment'
          AND NOT EXISTS (SELECT 1 FROM mt5_credit c
                          WHERE c.provider = r.provider
                            AND c.provider_payment_id = m.provider_key)
        ORDER BY m.row_id, k.webhook_event_id
    LOOP
        PERFORM event_replay_as(v.webhook_event_id,
            'reconciliation run ' || p_run || ': ' || r.provider
                || ' settled ' || v.provider_key || ' (row ' || v.row_id
                || ') and no credit has it',
            p_run);
    END LOOP;

    CREATE TEMP TABLE recon_scope ON COMMIT DROP AS
    WITH ids AS (
        SELECT c.id FROM mt5_credit c
        WHERE c.provider = r.provider
          AND c.provider_payment_id IN (SELECT provider_key FROM recon_moved)
        UNION
        SELECT c.id FROM mt5_credit c
        WHERE c.provider = r.provider AND c.paid_currency = r.currency
          AND c.created_at >= v_from AND c.created_at < r.window_end
          -- paired by the run of an earlier day, made after it
          AND NOT EXISTS (SELECT 1 FROM recon_paired_ahead a
                          JOIN recon_run o ON o.id = a.run_id
                          WHERE a.credit_id = c.id
                            AND o.business_day < r.business_day
                            AND o.provider = r.provider
                            AND o.verdict NOT IN ('running', 'incomplete'))
        UNION
        SELECT t.credit_id FROM recon_transit_credit t
        WHERE t.run_id = v_src.id
    )
    SELECT c.*,
           CASE WHEN c.original_credit_id IS NOT NULL THEN
               (SELECT o.provider_payment_id FROM mt5_credit o
                WHERE o.id = c.original_credit_id) END AS original_key,
           po.status AS payout_status, po.provider_payout_id,
           po.reference AS payout_reference,
           coalesce(t.since_day,
                    (c.created_at AT TIME ZONE r.time_zone)::date)
               AS since_day,
           coalesce(t.first_run_id, p_run) AS first_run_id,
           t.credit_id IS NOT NULL AS carried
    FROM ids
    JOIN mt5_credit c ON c.id = ids.id
    LEFT JOIN payout po ON po.debit_credit_id = c.id
    LEFT JOIN recon_transit_credit t
           ON t.run_id = v_src.id AND t.credit_id = c.id;
    ANALYZE recon_scope;
END
$$;


ALTER FUNCTION mt5credit.recon_prepare(p_run bigint) OWNER TO mt5credit_owner;

--
-- Name: recon_record_counts(bigint, bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.recon_record_counts(p_run bigint, p_prev bigint) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    SET work_mem TO '32MB'
    SET jit TO 'off'
    AS $$
BEGIN
    -- the day at a glance: each movement is matched (all three agree),
    -- mismatched (a finding other than being in flight), in transit, or
    -- neither
    CREATE TEMP TABLE recon_state ON COMMIT DROP AS
    SELECT p.movement,
           CASE WHEN f.broken THEN 'mismatched'
                WHEN f.pair_key IS NULL AND p.row_id IS NOT NULL
                     AND p.status = 'done' AND p.n_deals = 1
                THEN 'matched' END AS state,
           p.status, p.in_transit,
           (p.s_carried AND p.credit_id IS NOT NULL)
           OR (p.c_carried AND p.row_id IS NOT NULL) AS later
    FROM recon_pair p
    LEFT JOIN (SELECT pair_key, bool_or(kind <> 'open_at_cutoff') AS broken
               FROM recon_found WHERE pair_key IS NOT NULL
               GROUP BY pair_key) f ON f.pair_key = p.pair_key;

    INSERT INTO recon_count (run_id, dimension, name, n)
    SELECT p_run, 'summary', m.name, m.n
    FROM (SELECT count(*) FILTER (WHERE state = 'matched') AS matched,
                 count(*) FILTER (WHERE state = 'matched' AND later)
                     AS matched_later,
                 count(*) FILTER (WHERE in_transit) AS in_transit,
                 count(*) FILTER (WHERE status IN ('pending', 'claimed'))
                     AS pending,
                 count(*) FILTER (WHERE status = 'unknown') AS unknown
          FROM recon_state) x
    CROSS JOIN LATERAL (VALUES
        ('should_process',
         (SELECT count(*) FROM recon_moved WHERE NOT carried)),
        ('matched', x.matched),
        ('matched_later', x.matched_later),
        ('in_transit', x.in_transit),
        ('pending', x.pending),
        ('still_unknown', x.unknown),
        ('mismatched',
         (SELECT count(DISTINCT item_key) FROM recon_found
          WHERE kind <> 'open_at_cutoff')),
        ('fixed_since_last_run',
         (SELECT count(*) FROM recon_item i
          WHERE p_prev IS NOT NULL AND i.run_id = p_prev
            AND NOT EXISTS (SELECT 1 FROM recon_found f
                            WHERE f.kind = i.kind
                              AND f.item_key = i.item_key))),
        ('deals', (SELECT count(*) FROM recon_deal
                   WHERE run_id = p_run AND fetched_by = 'window')),
        ('deals_by_ticket', (SELECT count(*) FROM recon_deal
                             WHERE run_id = p_run
                               AND fetched_by = 'ticket')),
        ('settlement_rows',
         (SELECT count(*) FROM recon_settlement WHERE run_id = p_run)),
        ('replayed',
         (SELECT count(*) FROM webhook_event_replay
          WHERE recon_run_id = p_run))
    ) AS m (name, n);

    INSERT INTO recon_count (run_id, dimension, name, n)
    SELECT p_run, 'kind', kind, count(*) FROM recon_found GROUP BY kind;

    INSERT INTO recon_count (run_id, dimension, name, n)
    SELECT p_run, state, movement, count(*)
    FROM recon_state WHERE state IS NOT NULL
    GROUP BY state, movement;

    INSERT INTO recon_count (run_id, dimension, name, n)
    SELECT p_run, 'mismatched', 'unattributed', count(*)
    FROM recon_found WHERE movement = 'unattributed'
    HAVING count(*) > 0;
END
$$;


ALTER FUNCTION mt5credit.recon_record_counts(p_run bigint, p_prev bigint) OWNER TO mt5credit_owner;

--
-- Name: recon_record_items(bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.recon_record_items(p_run bigint) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    SET work_mem TO '32MB'
    SET jit TO 'off'
    AS $$
DECLARE
    r       recon_run;
    v_item  record;
    v_case  bigint;
BEGIN
    SELECT * INTO STRICT r FROM recon_run WHERE id = p_run;

    -- the deals the findings are about, gathered in one pass each: by
    -- reference for a movement, by ticket for a deal nobody explains
    CREATE TEMP TABLE recon_found_deals ON COMMIT DROP AS
    SELECT x.kind, x.item_key,
           jsonb_agg(to_jsonb(d) - 'run_id'
                     ORDER BY d.mt5_server, d.deal_ticket) AS deals
    FROM (SELECT f.kind, f.item_key, p.reference
          FROM recon_found f JOIN recon_pair p ON p.pair_key = f.pair_key
          WHERE p.reference IS NOT NULL) x
    JOIN recon_deal d
      ON d.run_id = p_run
     AND d.comment = x.reference
    GROUP BY x.kind, x.item_key
    UNION ALL
    SELECT f.kind, f.item_key,
           jsonb_agg(to_jsonb(d) - 'run_id') AS deals
    FROM recon_found f
    JOIN recon_deal d
      ON d.run_id = p_run AND d.mt5_server = f.deal_server
     AND d.deal_ticket = f.deal_ticket
    WHERE f.deal_ticket IS NOT NULL
    GROUP BY f.kind, f.item_key;

    -- items and cases, the three records side by side
    FOR v_item IN
        SELECT f.*,
               p.credit_id, p.deposit_id,
               coalesce(p.paid_amount_minor, abs(p.gross_minor),
                        abs((fd.deals->0->>'amount_minor')::bigint))
                   AS amount_minor,
               coalesce(p.paid_currency, p.s_currency,
                        fd.deals->0->>'currency') AS currency,
               to_jsonb(s) - 'run_id' AS settlement,
               CASE WHEN c.id IS NOT NULL THEN jsonb_build_object(
                    'id', c.id, 'reference', c.reference, 'kind', c.kind,
                    'direction', c.direction, 'status', c.status,
                    'provider', c.provider,
                    'provider_payment_id', c.provider_payment_id,
                    'mt5_server', c.mt5_server, 'mt5_login', c.mt5_login,
                    'amount_minor', c.amount_minor, 'currency', c.currency,
                    'paid_amount_minor', c.paid_amount_minor,
                    'paid_currency', c.paid_currency,
                    'mt5_deal_ticket', c.mt5_deal_ticket,
                    'created_at', c.created_at, 'since_day', c.since_day)
                    || CASE WHEN c.kind = 'withdrawal' THEN
                       jsonb_build_object('withdrawal_id', c.withdrawal_id,
                           'payout', c.payout_reference,
                           'payout_status', c.payout_status,
                           'provider_payout_id', c.provider_payout_id)
                       ELSE '{}' END END AS credit,
               coalesce(fd.deals, '[]') AS deals
        FROM recon_found f
        LEFT JOIN recon_pair p ON p.pair_key = f.pair_key
        LEFT JOIN recon_moved s ON s.row_id = p.row_id
        LEFT JOIN recon_scope c ON c.id = p.credit_id
        LEFT JOIN recon_found_deals fd
               ON fd.kind = f.kind AND fd.item_key = f.item_key
        ORDER BY f.kind, f.item_key
    LOOP
        v_case := open_case(v_item.kind, v_item.severity,
            'recon:' || v_item.kind || ':' || r.provider || ':'
                || v_item.item_key,
            jsonb_build_object('run', p_run,
                               'business_day', r.business_day,
                               'settlement', v_item.settlement,
                               'credit', v_item.credit,
                               'deals', v_item.deals),
            v_item.credit_id, v_item.deposit_id, NULL,
            v_item.amount_minor, v_item.currency);

        INSERT INTO recon_item (run_id, kind, item_key, severity, movement,
                                amount_minor, currency, settlement, credit,
                                deals, case_id)
        VALUES (p_run, v_item.kind, v_item.item_key, v_item.severity,
                v_item.movement, v_item.amount_minor, v_item.currency,
                v_item.settlement, v_item.credit, v_item.deals, v_case);
    END LOOP;
END
$$;


ALTER FUNCTION mt5credit.recon_record_items(p_run bigint) OWNER TO mt5credit_owner;

--
-- Name: recon_report_store(bigint, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.recon_report_store(p_run bigint, p_html text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_verdict  text;
    v_n        integer;
BEGIN
    SELECT verdict INTO v_verdict FROM recon_run WHERE id = p_run;

    IF v_verdict IS NULL THEN
        RAISE EXCEPTION 'no reconciliation run %', p_run
            USING ERRCODE = 'MC095';
    END IF;

    IF v_verdict = 'running' THEN
        RAISE EXCEPTION 'run % is still running: it has no report yet',
                        p_run
            USING ERRCODE = 'MC095';
    END IF;

    INSERT INTO recon_report (run_id, html, html_sha256)
    VALUES (p_run, p_html,
            encode(sha256(convert_to(p_html, 'UTF8')), 'hex'))
    ON CONFLICT (run_id) DO NOTHING;

    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n = 1;
END
$$;


ALTER FUNCTION mt5credit.recon_report_store(p_run bigint, p_html text) OWNER TO mt5credit_owner;

--
-- Name: recon_run_finish_clock(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.recon_run_finish_clock() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    IF OLD.verdict = 'running' AND NEW.verdict <> 'running' THEN
        NEW.finished_at := clock_timestamp();
    END IF;
    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.recon_run_finish_clock() OWNER TO mt5credit_owner;

--
-- Name: recon_run_guard(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.recon_run_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF OLD.verdict <> 'running' THEN
        RAISE EXCEPTION 'reconciliation run % is finished', OLD.id
            USING ERRCODE = 'MC031';
    END IF;
    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.recon_run_guard() OWNER TO mt5credit_owner;

--
-- Name: recon_run; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.recon_run (
    id bigint NOT NULL,
    provider text NOT NULL,
    business_day date NOT NULL,
    time_zone text NOT NULL,
    currency text NOT NULL,
    window_start timestamp with time zone NOT NULL,
    window_end timestamp with time zone NOT NULL,
    deal_window_end timestamp with time zone NOT NULL,
    settlement_format text NOT NULL,
    settlement_sha256 text NOT NULL,
    control_sha256 text,
    deals_digest text,
    input_digest text,
    verdict text NOT NULL,
    reason text,
    started_by text DEFAULT mt5credit.person() NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    previous_run_id bigint,
    match_window_days integer DEFAULT 7 NOT NULL,
    carried_from_run_id bigint,
    settlement_grace_hours integer DEFAULT 24,
    CONSTRAINT recon_run_check CHECK ((window_end > window_start)),
    CONSTRAINT recon_run_check1 CHECK ((deal_window_end >= window_end)),
    CONSTRAINT recon_run_check2 CHECK (((verdict = 'incomplete'::text) = (reason IS NOT NULL))),
    CONSTRAINT recon_run_check3 CHECK (((verdict = 'running'::text) = (finished_at IS NULL))),
    CONSTRAINT recon_run_check4 CHECK (((verdict = ANY (ARRAY['running'::text, 'incomplete'::text])) OR (input_digest IS NOT NULL))),
    CONSTRAINT recon_run_control_sha256_check CHECK ((control_sha256 ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT recon_run_deals_digest_check CHECK ((deals_digest ~ '^[0-9a-f]{32}$'::text)),
    CONSTRAINT recon_run_match_window_days_check CHECK (((match_window_days >= 0) AND (match_window_days <= 62))),
    CONSTRAINT recon_run_provider_check CHECK ((provider ~ '^[a-z][a-z0-9_-]{0,31}$'::text)),
    CONSTRAINT recon_run_settlement_format_check CHECK ((settlement_format = ANY (ARRAY['stripe'::text, 'generic'::text]))),
    CONSTRAINT recon_run_settlement_grace_bounded CHECK (((settlement_grace_hours >= 0) AND (settlement_grace_hours <= 168))),
    CONSTRAINT recon_run_settlement_grace_known CHECK (((settlement_grace_hours IS NOT NULL) OR (verdict <> 'running'::text))),
    CONSTRAINT recon_run_settlement_sha256_check CHECK ((settlement_sha256 ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT recon_run_verdict_check CHECK ((verdict = ANY (ARRAY['running'::text, 'incomplete'::text, 'breaks'::text, 'pending'::text, 'reconciled'::text])))
);


ALTER TABLE mt5credit.recon_run OWNER TO mt5credit_owner;

--
-- Name: TABLE recon_run; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.recon_run IS 'One reconciliation of one provider, day and currency; append-only once finished.';


--
-- Name: COLUMN recon_run.carried_from_run_id; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.recon_run.carried_from_run_id IS 'the run whose in-transit items this run started from (040)';


--
-- Name: COLUMN recon_run.settlement_grace_hours; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.recon_run.settlement_grace_hours IS 'hours a settlement row waits for its credit, from its created_at to the end of the run''s day, never past match_window_days; NULL: a run before 067, whose rows waited the window (067)';


--
-- Name: recon_running(bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.recon_running(p_run bigint) RETURNS mt5credit.recon_run
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    r  recon_run;
BEGIN
    SELECT * INTO STRICT r FROM recon_run WHERE id = p_run FOR UPDATE;
    IF r.verdict <> 'running' THEN
        RAISE EXCEPTION 'run % is finished', p_run USING ERRCODE = 'MC031';
    END IF;
    RETURN r;
END
$$;


ALTER FUNCTION mt5credit.recon_running(p_run bigint) OWNER TO mt5credit_owner;

--
-- Name: recon_tickets(bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.recon_tickets(p_run bigint) RETURNS TABLE(mt5_server text, deal_ticket bigint, mt5_login bigint, currency text, digits integer)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    SET work_mem TO '32MB'
    SET jit TO 'off'
    AS $$
BEGIN
    PERFORM recon_prepare(p_run);

    RETURN QUERY
    SELECT c.mt5_server, c.mt5_deal_ticket, c.mt5_login, c.currency,
           cur.minor_digits::integer
    FROM recon_scope c
    JOIN currency cur ON cur.code = c.currency
    WHERE c.status = 'done' AND c.mt5_deal_ticket IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM recon_deal d
                      WHERE d.run_id = p_run
                        AND d.mt5_server = c.mt5_server
                        AND d.deal_ticket = c.mt5_deal_ticket)
    ORDER BY 1, 2;
END
$$;


ALTER FUNCTION mt5credit.recon_tickets(p_run bigint) OWNER TO mt5credit_owner;

--
-- Name: recon_window(bigint, integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.recon_window(p_run bigint, p_days integer) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT mt5credit.recon_window(p_run, p_days,
        (SELECT settlement_grace_hours FROM mt5credit.recon_run
         WHERE id = p_run))
$$;


ALTER FUNCTION mt5credit.recon_window(p_run bigint, p_days integer) OWNER TO mt5credit_owner;

--
-- Name: FUNCTION recon_window(p_run bigint, p_days integer); Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON FUNCTION mt5credit.recon_window(p_run bigint, p_days integer) IS 'The previous release''s call of recon_window() (040''s signature), kept as a wrapper (072)';


--
-- Name: recon_window(bigint, integer, integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.recon_window(p_run bigint, p_days integer, p_grace_hours integer) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    PERFORM recon_running(p_run);
    UPDATE recon_run
    SET match_window_days = p_days, settlement_grace_hours = p_grace_hours
    WHERE id = p_run AND verdict = 'running';
END
$$;


ALTER FUNCTION mt5credit.recon_window(p_run bigint, p_days integer, p_grace_hours integer) OWNER TO mt5credit_owner;

--
-- Name: refund_absent(bigint, integer, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.refund_absent(p_id bigint, p_attempt integer, p_sender text, p_detail jsonb) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    PERFORM set_actor(p_sender, p_detail);
    UPDATE withdrawal_refund
    SET status = 'pending', next_check_at = NULL, lease_expires_at = NULL
    WHERE id = p_id AND status = 'unknown' AND attempts = p_attempt;
    RETURN FOUND;
END
$$;


ALTER FUNCTION mt5credit.refund_absent(p_id bigint, p_attempt integer, p_sender text, p_detail jsonb) OWNER TO mt5credit_owner;

--
-- Name: refund_answered(bigint, integer, text, text, text, text, text, text, jsonb, integer, integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.refund_answered(p_id bigint, p_attempt integer, p_from text, p_refund_id text, p_status text, p_failure_code text, p_failure_message text, p_sender text, p_detail jsonb, p_recheck_seconds integer, p_watch_seconds integer) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    r        withdrawal_refund;
    v_to     text;
    v_now    timestamptz := clock_timestamp();
    v_until  timestamptz;
BEGIN
    IF p_from NOT IN ('sending', 'unknown', 'accepted', 'succeeded') THEN
        RAISE EXCEPTION 'not a state a refund is answered in: %', p_from
            USING ERRCODE = 'MC092';
    END IF;

    v_to := CASE
            WHEN p_status IN ('pending', 'requires_action') THEN 'accepted'
            WHEN p_status = 'succeeded' THEN 'succeeded'
            WHEN p_status IN ('failed', 'canceled', 'declined') THEN 'failed'
            END;
    IF v_to IS NULL THEN
        RAISE EXCEPTION 'refund status "%" is not one we know', p_status
            USING ERRCODE = 'MC092';
    END IF;
    IF p_from = 'succeeded' AND v_to = 'accepted' THEN
        RAISE EXCEPTION 'refund %: succeeded, and now "%" at the provider: '
                        'a refund does not go back', p_id, p_status
            USING ERRCODE = 'MC092';
    END IF;

    PERFORM set_actor(p_sender, coalesce(p_detail, '{}')
                                || jsonb_build_object('provider_status',
                                                      p_status));

    SELECT * INTO r FROM withdrawal_refund
    WHERE id = p_id AND status = p_from AND attempts = p_attempt
      AND (provider_refund_id IS NULL OR provider_refund_id = p_refund_id)
    FOR UPDATE;
    IF NOT FOUND THEN
        RETURN 'stale';
    END IF;

    -- the watch starts when it is first seen succeeded, and never moves
    v_until := CASE WHEN v_to <> 'succeeded' OR p_from = 'succeeded'
                    THEN r.watch_until
                    WHEN p_watch_seconds > 0
                    THEN v_now + make_interval(secs => p_watch_seconds)
                    END;

    UPDATE withdrawal_refund
    SET status = v_to, provider_refund_id = p_refund_id,
        provider_status = p_status,
        failure_code = CASE WHEN v_to = 'failed'
                            THEN coalesce(p_failure_code, p_status) END,
        failure_message = CASE WHEN v_to = 'failed'
                               THEN left(p_failure_message, 1000) END,
        lease_expires_at = NULL,
        watch_until = v_until,
        next_check_at = CASE
            WHEN v_to = 'accepted'
                 OR (v_to = 'succeeded' AND v_until IS NOT NULL
                     AND v_now + make_interval(secs => p_recheck_seconds)
                         < v_until)
            THEN v_now + make_interval(secs => p_recheck_seconds)
            WHEN v_to = 'succeeded' AND v_until > v_now
            THEN v_until                -- one last look at the end
            END
    WHERE id = r.id
    RETURNING * INTO r;

    IF v_to = 'failed' THEN
        PERFORM refund_failed_case(r);
    END IF;
    RETURN CASE WHEN p_from = 'succeeded' AND v_to = 'failed' THEN 'returned'
                ELSE v_to END;
END
$$;


ALTER FUNCTION mt5credit.refund_answered(p_id bigint, p_attempt integer, p_from text, p_refund_id text, p_status text, p_failure_code text, p_failure_message text, p_sender text, p_detail jsonb, p_recheck_seconds integer, p_watch_seconds integer) OWNER TO mt5credit_owner;

--
-- Name: refund_card_hint(bigint, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.refund_card_hint(p_id bigint, p_hint text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    UPDATE withdrawal_refund SET card_hint = p_hint
    WHERE id = p_id AND card_hint IS NULL
      AND status IN ('accepted', 'succeeded');
    RETURN FOUND;
END
$$;


ALTER FUNCTION mt5credit.refund_card_hint(p_id bigint, p_hint text) OWNER TO mt5credit_owner;

--
-- Name: refund_check_due(text, integer, integer, integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.refund_check_due(p_provider text, p_margin_seconds integer, p_lookup_seconds integer, p_limit integer) RETURNS SETOF mt5credit.refund_item
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_id  bigint;
BEGIN
    FOR v_id IN
        WITH due AS (
            SELECT id FROM withdrawal_refund
            WHERE provider = p_provider
              AND ((status = 'unknown'
                    AND lease_expires_at
                        + make_interval(secs => p_margin_seconds)
                        < clock_timestamp()
                    AND (next_check_at IS NULL
                         OR next_check_at <= clock_timestamp()))
                   OR (status = 'accepted'
                       AND (next_check_at IS NULL
                            OR next_check_at <= clock_timestamp()))
                   OR (status = 'succeeded'
                       AND next_check_at <= clock_timestamp()))
            ORDER BY status <> 'unknown', next_check_at NULLS FIRST, id
            LIMIT p_limit
            FOR UPDATE SKIP LOCKED
        )
        UPDATE withdrawal_refund r
        SET next_check_at = CASE
                WHEN r.status = 'succeeded'
                     AND clock_timestamp() >= r.watch_until
                THEN NULL               -- this is the last look
                ELSE clock_timestamp()
                     + make_interval(secs => p_lookup_seconds) END
        FROM due
        WHERE r.id = due.id
        RETURNING r.id
    LOOP
        RETURN NEXT refund_item_of(v_id);
    END LOOP;
END
$$;


ALTER FUNCTION mt5credit.refund_check_due(p_provider text, p_margin_seconds integer, p_lookup_seconds integer, p_limit integer) OWNER TO mt5credit_owner;

--
-- Name: refund_check_failed(bigint, integer, text, text, integer, integer, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.refund_check_failed(p_id bigint, p_attempt integer, p_case_kind text, p_why text, p_backoff_seconds integer, p_max_lookups integer, p_sender text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    r  withdrawal_refund;
BEGIN
    IF p_case_kind NOT IN ('refund_no_answer', 'refund_conflict') THEN
        RAISE EXCEPTION 'not a refund case: %', p_case_kind
            USING ERRCODE = 'MC092';
    END IF;

    UPDATE withdrawal_refund
    SET lookups = lookups + 1,
        next_check_at = clock_timestamp()
                        + least(make_interval(secs => p_backoff_seconds)
                                * 2 ^ least(lookups, 16),
                                interval '1 day')
    WHERE id = p_id AND attempts = p_attempt
      AND status IN ('unknown', 'accepted', 'succeeded')
    RETURNING * INTO r;
    IF NOT FOUND THEN
        RETURN false;
    END IF;

    IF p_case_kind = 'refund_no_answer' AND r.lookups < p_max_lookups THEN
        RETURN false;
    END IF;

    PERFORM set_actor(p_sender, '{"step": "lookup"}');
    PERFORM open_case(p_case_kind,
        CASE p_case_kind WHEN 'refund_conflict' THEN 'critical'
                         ELSE 'high' END,
        p_case_kind || ':' || r.reference,
        jsonb_build_object('refund', r.reference, 'status', r.status,
                           'payment', r.payment_key,
                           'lookups', r.lookups, 'last', p_why,
                           'seen_at', clock_timestamp()),
        r.debit_credit_id, NULL, NULL, r.account_amount_minor,
        (SELECT currency FROM mt5_credit WHERE id = r.debit_credit_id));
    RETURN true;
END
$$;


ALTER FUNCTION mt5credit.refund_check_failed(p_id bigint, p_attempt integer, p_case_kind text, p_why text, p_backoff_seconds integer, p_max_lookups integer, p_sender text) OWNER TO mt5credit_owner;

--
-- Name: refund_claim(text, text, integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.refund_claim(p_provider text, p_sender text, p_lease_seconds integer) RETURNS SETOF mt5credit.refund_item
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_id  bigint;
BEGIN
    IF p_lease_seconds < 1 THEN
        RAISE EXCEPTION 'lease must be at least a second'
            USING ERRCODE = 'MC020';
    END IF;
    IF paused('provider', p_provider) THEN
        RETURN;
    END IF;
    PERFORM set_actor(p_sender, '{"step": "claim"}');

    WITH next AS (
        SELECT id FROM withdrawal_refund
        WHERE status = 'pending' AND provider = p_provider
        ORDER BY id
        LIMIT 1
        FOR UPDATE SKIP LOCKED
    )
    UPDATE withdrawal_refund r
    SET status = 'sending', attempts = r.attempts + 1,
        claimed_by = left(p_sender, 200), claimed_at = clock_timestamp(),
        lease_expires_at = clock_timestamp()
                           + make_interval(secs => p_lease_seconds),
        first_sent_at = coalesce(r.first_sent_at, clock_timestamp()),
        next_check_at = NULL
    FROM next
    WHERE r.id = next.id AND r.status = 'pending'
    RETURNING r.id INTO v_id;

    IF v_id IS NOT NULL THEN
        RETURN NEXT refund_item_of(v_id);
    END IF;
END
$$;


ALTER FUNCTION mt5credit.refund_claim(p_provider text, p_sender text, p_lease_seconds integer) OWNER TO mt5credit_owner;

--
-- Name: refund_declined(bigint, integer, text, text, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.refund_declined(p_id bigint, p_attempt integer, p_failure_code text, p_failure_message text, p_sender text, p_detail jsonb) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    r  withdrawal_refund;
BEGIN
    PERFORM set_actor(p_sender, p_detail);
    UPDATE withdrawal_refund
    SET status = 'failed', failure_code = p_failure_code,
        failure_message = left(p_failure_message, 1000),
        lease_expires_at = NULL
    WHERE id = p_id AND status = 'sending' AND attempts = p_attempt
    RETURNING * INTO r;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM refund_failed_case(r);
    RETURN true;
END
$$;


ALTER FUNCTION mt5credit.refund_declined(p_id bigint, p_attempt integer, p_failure_code text, p_failure_message text, p_sender text, p_detail jsonb) OWNER TO mt5credit_owner;

--
-- Name: withdrawal_refund; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.withdrawal_refund (
    id bigint NOT NULL,
    withdrawal_id bigint NOT NULL,
    plan_no integer NOT NULL,
    leg integer NOT NULL,
    leg_kind text GENERATED ALWAYS AS ('refund'::text) STORED NOT NULL,
    debit_credit_id bigint NOT NULL,
    debit_kind text GENERATED ALWAYS AS ('withdrawal'::text) STORED NOT NULL,
    debit_status text GENERATED ALWAYS AS ('done'::text) STORED NOT NULL,
    provider text NOT NULL,
    credit_id bigint NOT NULL,
    payment_key text NOT NULL,
    amount_minor bigint NOT NULL,
    currency text NOT NULL,
    account_amount_minor bigint NOT NULL,
    reference text GENERATED ALWAYS AS (((('wd_'::text ||
CASE
    WHEN (withdrawal_id < 1000000) THEN lpad((withdrawal_id)::text, 6, '0'::text)
    ELSE (withdrawal_id)::text
END) || '.'::text) || leg)) STORED NOT NULL,
    idempotency_key text GENERATED ALWAYS AS (((('mt5credit-refund-'::text || withdrawal_id) || '-'::text) || leg)) STORED NOT NULL,
    deployment_tag text,
    status text DEFAULT 'pending'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    claimed_by text,
    claimed_at timestamp with time zone,
    lease_expires_at timestamp with time zone,
    first_sent_at timestamp with time zone,
    next_check_at timestamp with time zone,
    watch_until timestamp with time zone,
    lookups integer DEFAULT 0 NOT NULL,
    provider_refund_id text,
    provider_status text,
    failure_code text,
    failure_message text,
    card_hint text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT withdrawal_refund_account_amount_minor_check CHECK ((account_amount_minor > 0)),
    CONSTRAINT withdrawal_refund_amount_minor_check CHECK ((amount_minor > 0)),
    CONSTRAINT withdrawal_refund_attempts_check CHECK ((attempts >= 0)),
    CONSTRAINT withdrawal_refund_card_hint_check CHECK ((card_hint ~ '^[a-z_]{1,24} [0-9]{4}$'::text)),
    CONSTRAINT withdrawal_refund_check CHECK (((status <> ALL (ARRAY['accepted'::text, 'succeeded'::text])) OR (provider_refund_id IS NOT NULL))),
    CONSTRAINT withdrawal_refund_check1 CHECK (((status <> 'failed'::text) OR (failure_code IS NOT NULL))),
    CONSTRAINT withdrawal_refund_check2 CHECK (((status <> 'sending'::text) OR ((claimed_by IS NOT NULL) AND (claimed_at IS NOT NULL) AND (lease_expires_at IS NOT NULL)))),
    CONSTRAINT withdrawal_refund_check3 CHECK (((status = 'pending'::text) OR (attempts > 0))),
    CONSTRAINT withdrawal_refund_check4 CHECK (((attempts > 0) = (first_sent_at IS NOT NULL))),
    CONSTRAINT withdrawal_refund_check5 CHECK (((watch_until IS NULL) OR (status = ANY (ARRAY['succeeded'::text, 'failed'::text])))),
    CONSTRAINT withdrawal_refund_failure_code_check CHECK ((length(failure_code) <= 128)),
    CONSTRAINT withdrawal_refund_failure_message_check CHECK ((length(failure_message) <= 1000)),
    CONSTRAINT withdrawal_refund_lookups_check CHECK ((lookups >= 0)),
    CONSTRAINT withdrawal_refund_provider_refund_id_check CHECK ((provider_refund_id ~ '^[A-Za-z0-9_-]{1,255}$'::text)),
    CONSTRAINT withdrawal_refund_provider_status_check CHECK ((length(provider_status) <= 64)),
    CONSTRAINT withdrawal_refund_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'sending'::text, 'unknown'::text, 'accepted'::text, 'succeeded'::text, 'failed'::text])))
);


ALTER TABLE mt5credit.withdrawal_refund OWNER TO mt5credit_owner;

--
-- Name: TABLE withdrawal_refund; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.withdrawal_refund IS 'A refund leg of a withdrawal whose MT5 debit is done, and the state of sending it to the provider under one idempotency key.';


--
-- Name: refund_failed_case(mt5credit.withdrawal_refund); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.refund_failed_case(r mt5credit.withdrawal_refund) RETURNS void
    LANGUAGE sql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT open_case('refund_failed', 'critical',
        'refund_failed:' || r.reference,
        jsonb_build_object('refund', r.reference,
                           'payment', r.payment_key,
                           'provider_refund_id', r.provider_refund_id,
                           'refund_amount_minor', r.amount_minor,
                           'refund_currency', r.currency,
                           'failure_code', r.failure_code,
                           'failure_message', r.failure_message,
                           'note', 'this share of the MT5 debit stands and '
                                   'nothing went back to the client: '
                                   'return it with a correcting credit '
                                   '(two people), or pay it another way'),
        r.debit_credit_id, NULL, NULL, r.account_amount_minor,
        (SELECT currency FROM mt5_credit WHERE id = r.debit_credit_id));
$$;


ALTER FUNCTION mt5credit.refund_failed_case(r mt5credit.withdrawal_refund) OWNER TO mt5credit_owner;

--
-- Name: refund_item_of(bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.refund_item_of(p_id bigint) RETURNS mt5credit.refund_item
    LANGUAGE sql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT r.id, r.attempts, r.status, r.reference,
           CASE WHEN r.deployment_tag IS NULL THEN r.idempotency_key
                ELSE 'mt5credit-' || r.deployment_tag || '-refund-'
                     || r.withdrawal_id || '-' || r.leg END,
           r.provider, r.payment_key, r.amount_minor, r.currency,
           r.provider_refund_id, w.reference,
           mt5_comment(c.deployment_tag, c.reference),
           extract(epoch FROM r.first_sent_at)::bigint, r.deployment_tag,
           r.card_hint
    FROM withdrawal_refund r
    JOIN withdrawal w ON w.id = r.withdrawal_id
    JOIN mt5_credit c ON c.id = r.debit_credit_id
    WHERE r.id = p_id
$$;


ALTER FUNCTION mt5credit.refund_item_of(p_id bigint) OWNER TO mt5credit_owner;

--
-- Name: refund_sweep(text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.refund_sweep(p_sender text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_n  integer;
BEGIN
    PERFORM set_actor(p_sender,
                      '{"step": "sweep", "reason": "lease expired"}');
    UPDATE withdrawal_refund SET status = 'unknown'
    WHERE status = 'sending' AND lease_expires_at < clock_timestamp();
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END
$$;


ALTER FUNCTION mt5credit.refund_sweep(p_sender text) OWNER TO mt5credit_owner;

--
-- Name: refund_unsent(bigint, integer, text, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.refund_unsent(p_id bigint, p_attempt integer, p_to text, p_sender text, p_detail jsonb) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    IF p_to NOT IN ('pending', 'unknown') THEN
        RAISE EXCEPTION 'a refund being sent goes back to pending or to '
                        'unknown, not %', p_to USING ERRCODE = 'MC092';
    END IF;
    PERFORM set_actor(p_sender, p_detail);
    UPDATE withdrawal_refund
    SET status = p_to,
        lease_expires_at = CASE WHEN p_to = 'unknown'
                                THEN lease_expires_at END
    WHERE id = p_id AND status = 'sending' AND attempts = p_attempt;
    RETURN FOUND;
END
$$;


ALTER FUNCTION mt5credit.refund_unsent(p_id bigint, p_attempt integer, p_to text, p_sender text, p_detail jsonb) OWNER TO mt5credit_owner;

--
-- Name: refuse_change(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.refuse_change() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'MC013';
END
$$;


ALTER FUNCTION mt5credit.refuse_change() OWNER TO mt5credit_owner;

--
-- Name: register_account(text, text, bigint, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.register_account(p_client_id text, p_mt5_server text, p_mt5_login bigint, p_currency text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_id  bigint;
    v_acc client_account;
BEGIN
    INSERT INTO client_account (client_id, mt5_server, mt5_login, currency)
    VALUES (p_client_id, p_mt5_server, p_mt5_login, p_currency)
    ON CONFLICT (mt5_server, mt5_login) DO NOTHING
    RETURNING id INTO v_id;

    IF v_id IS NOT NULL THEN
        RETURN v_id;
    END IF;

    SELECT * INTO v_acc FROM client_account
    WHERE mt5_server = p_mt5_server AND mt5_login = p_mt5_login;

    IF v_acc.client_id <> p_client_id OR v_acc.currency <> p_currency THEN
        RAISE EXCEPTION 'MT5 login %/% is registered to another client or '
                        'currency', p_mt5_server, p_mt5_login
            USING ERRCODE = 'MC001';
    END IF;

    RETURN v_acc.id;
END
$$;


ALTER FUNCTION mt5credit.register_account(p_client_id text, p_mt5_server text, p_mt5_login bigint, p_currency text) OWNER TO mt5credit_owner;

--
-- Name: resolve_absent(bigint, integer, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.resolve_absent(p_id bigint, p_attempt integer, p_worker text, p_detail jsonb) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    PERFORM set_actor(p_worker, p_detail);

    UPDATE mt5_credit
    SET status = 'pending', next_check_at = NULL, lease_expires_at = NULL
    WHERE id = p_id AND status = 'unknown' AND attempts = p_attempt;

    RETURN FOUND;
END
$$;


ALTER FUNCTION mt5credit.resolve_absent(p_id bigint, p_attempt integer, p_worker text, p_detail jsonb) OWNER TO mt5credit_owner;

--
-- Name: resolve_claim(text[], integer, integer, integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.resolve_claim(p_servers text[], p_margin_seconds integer, p_lookup_seconds integer, p_limit integer) RETURNS SETOF mt5credit.work_item
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_id  bigint;
BEGIN
    FOR v_id IN
        WITH due AS (
            SELECT c.id
            FROM mt5_credit c
            WHERE c.status = 'unknown'
              AND c.mt5_server = ANY (p_servers)
              AND c.lease_expires_at
                  + make_interval(secs => p_margin_seconds) < clock_timestamp()
              AND (c.next_check_at IS NULL
                   OR c.next_check_at <= clock_timestamp())
            ORDER BY c.id
            LIMIT p_limit
            FOR UPDATE SKIP LOCKED
        )
        UPDATE mt5_credit c
        SET next_check_at = clock_timestamp()
                            + make_interval(secs => p_lookup_seconds)
        FROM due
        WHERE c.id = due.id AND c.status = 'unknown'
        RETURNING c.id
    LOOP
        RETURN NEXT work_item_of(v_id);
    END LOOP;
END
$$;


ALTER FUNCTION mt5credit.resolve_claim(p_servers text[], p_margin_seconds integer, p_lookup_seconds integer, p_limit integer) OWNER TO mt5credit_owner;

--
-- Name: resolve_found(bigint, integer, bigint, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.resolve_found(p_id bigint, p_attempt integer, p_ticket bigint, p_worker text, p_detail jsonb) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    PERFORM set_actor(p_worker, p_detail);

    UPDATE mt5_credit
    SET status = 'done', mt5_deal_ticket = p_ticket, next_check_at = NULL
    WHERE id = p_id AND status = 'unknown' AND attempts = p_attempt;

    RETURN FOUND;
END
$$;


ALTER FUNCTION mt5credit.resolve_found(p_id bigint, p_attempt integer, p_ticket bigint, p_worker text, p_detail jsonb) OWNER TO mt5credit_owner;

--
-- Name: resolve_unresolved(bigint, integer, text, text, jsonb, integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.resolve_unresolved(p_id bigint, p_attempt integer, p_case_kind text, p_worker text, p_detail jsonb, p_retry_seconds integer) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_dep  bigint;
BEGIN
    IF p_case_kind NOT IN ('deal_conflict', 'mt5_no_answer') THEN
        RAISE EXCEPTION 'not a resolver case: %', p_case_kind
            USING ERRCODE = 'MC021';
    END IF;

    UPDATE mt5_credit
    SET next_check_at = clock_timestamp()
                        + make_interval(secs => p_retry_seconds)
    WHERE id = p_id AND status = 'unknown' AND attempts = p_attempt
    RETURNING deposit_id INTO v_dep;

    IF NOT FOUND THEN
        RETURN false;
    END IF;

    PERFORM set_actor(p_worker, p_detail);
    PERFORM open_case(p_case_kind,
                      CASE p_case_kind WHEN 'deal_conflict' THEN 'critical'
                                       ELSE 'high' END,
                      p_case_kind || ':credit:' || p_id,
                      coalesce(p_detail, '{}'::jsonb)
                      || jsonb_build_object('attempt', p_attempt,
                                            'seen_at', clock_timestamp()),
                      p_id, v_dep, NULL);
    RETURN true;
END
$$;


ALTER FUNCTION mt5credit.resolve_unresolved(p_id bigint, p_attempt integer, p_case_kind text, p_worker text, p_detail jsonb, p_retry_seconds integer) OWNER TO mt5credit_owner;

--
-- Name: retention_redact(integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.retention_redact(p_days integer) RETURNS TABLE(redacted bigint, held_by_cases bigint, conflicts bigint, malformed bigint, names_erased bigint)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_before  timestamptz;
BEGIN
    IF p_days IS NULL OR p_days < 90 OR p_days > 3650 THEN
        RAISE EXCEPTION 'retention: bodies are kept 90 to 3650 days, not %',
                        coalesce(p_days::text, 'none')
            USING ERRCODE = 'MC150',
                  HINT = 'reconciliation looks back 62 days and replays '
                         'settled events';
    END IF;

    v_before := clock_timestamp() - make_interval(days => p_days);

    CREATE TEMP TABLE retention_old ON COMMIT DROP AS
    SELECT e.id,
           EXISTS (SELECT 1 FROM "case" k
                   WHERE k.status <> 'resolved'
                     AND (k.webhook_event_id = e.id
                          OR (e.credit_id IS NOT NULL
                              AND k.credit_id = e.credit_id))) AS held
    FROM webhook_event e
    LEFT JOIN mt5_credit c ON c.id = e.credit_id
    WHERE e.received_at < v_before
      AND e.body_redacted_at IS NULL
      AND (c.id IS NULL OR c.status IN ('done', 'failed'));

    UPDATE webhook_event e
    SET raw_body = ''::bytea, body_redacted_at = clock_timestamp()
    FROM retention_old o
    WHERE e.id = o.id AND NOT o.held;
    GET DIAGNOSTICS redacted = ROW_COUNT;

    UPDATE webhook_event_conflict x
    SET raw_body = ''::bytea, body_redacted_at = clock_timestamp()
    FROM retention_old o
    WHERE x.event_id = o.id AND NOT o.held AND x.body_redacted_at IS NULL;
    GET DIAGNOSTICS conflicts = ROW_COUNT;

    SELECT count(*) INTO held_by_cases FROM retention_old WHERE held;

    -- 074: by its latest delivery, which a provider may still repeat
    UPDATE webhook_malformed m
    SET raw_body = ''::bytea, body_redacted_at = clock_timestamp()
    WHERE m.last_received_at < v_before AND m.body_redacted_at IS NULL;
    GET DIAGNOSTICS malformed = ROW_COUNT;

    -- 090: the payer's name on a credit whose event's body this run
    -- emptied (a body kept for a case is emptied, and the name erased,
    -- by the run after the case is resolved)
    UPDATE mt5_credit c
    SET payer_name = NULL, payer_name_erased_at = clock_timestamp()
    FROM retention_old o
    JOIN webhook_event e ON e.id = o.id
    WHERE NOT o.held AND c.id = e.credit_id AND c.payer_name IS NOT NULL;
    GET DIAGNOSTICS names_erased = ROW_COUNT;

    RETURN NEXT;
END
$$;


ALTER FUNCTION mt5credit.retention_redact(p_days integer) OWNER TO mt5credit_owner;

--
-- Name: FUNCTION retention_redact(p_days integer); Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON FUNCTION mt5credit.retention_redact(p_days integer) IS 'Empties the bodies of events older than p_days (90..3650) that no open case and no unfinished credit needs, and of malformed deliveries last delivered before then; their digests stay (070, 074).  Erases the payer''s name of each credit whose event''s body it empties (090)';


--
-- Name: reversal_check(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.reversal_check() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v  record;
BEGIN
    -- what this row's insert or failure has just made: a pending reversal
    -- of a failed credit, or a pending reinstatement of a failed
    -- chargeback debit; either waits for ever, so a person is told
    FOR v IN
        SELECT 'reversal_of_failed_credit' AS kind, r.id, r.reference,
               r.deposit_id, r.amount_minor, r.currency, o.id AS failed_id,
               o.reference AS failed_reference
        FROM mt5_credit r
        JOIN mt5_credit o ON o.id = r.original_credit_id
        WHERE r.status = 'pending' AND o.status = 'failed'
          AND NEW.id IN (r.id, o.id)
        UNION ALL
        SELECT 'reinstatement_after_failed_debit', r.id, r.reference,
               r.deposit_id, r.amount_minor, r.currency, d.id, d.reference
        FROM mt5_credit r
        JOIN mt5_credit d ON d.original_credit_id = r.original_credit_id
        WHERE r.original_credit_id = NEW.original_credit_id
          AND r.kind = 'chargeback' AND r.direction = 'credit'
          AND r.status = 'pending'
          AND d.kind = 'chargeback' AND d.direction = 'debit'
          AND d.status = 'failed'
          AND NEW.id IN (r.id, d.id)
    LOOP
        PERFORM open_case(v.kind, 'high',
                          v.kind || ':credit:' || v.id,
                          jsonb_build_object(
                              'waiting', v.id,
                              'waiting_reference', v.reference,
                              'failed', v.failed_id,
                              'failed_reference', v.failed_reference),
                          v.id, v.deposit_id, NULL,
                          v.amount_minor, v.currency);
    END LOOP;

    RETURN NULL;
END
$$;


ALTER FUNCTION mt5credit.reversal_check() OWNER TO mt5credit_owner;

--
-- Name: rewind_begin(text, integer, jsonb, text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.rewind_begin(p_worker text, p_lease_seconds integer, p_detail jsonb, p_kind text, p_severity text, OUT rewind_id bigint, OUT credits integer) RETURNS record
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_credit     bigint;
    v_wd         bigint;
    v_lost_from  timestamptz;
    v_asked      integer;
BEGIN
    PERFORM set_actor(p_worker, coalesce(p_detail, '{}')
                                || jsonb_build_object('step', p_kind));

    -- 066: what the database still held ends here; its credits' history
    -- is every change to them
    v_lost_from := coalesce((SELECT h.at FROM credit_history h
                             ORDER BY h.id DESC LIMIT 1),
                            clock_timestamp());

    -- attempts + 1: the lost timeline may have claimed it (the attempt is
    -- the lease token, so no worker of that timeline can write it now);
    -- 066: looked up from the lost timeline's start
    UPDATE mt5_credit
    SET status = 'unknown',
        attempts = attempts + 1,
        lease_expires_at = clock_timestamp()
                           + make_interval(secs => p_lease_seconds),
        next_check_at = NULL,
        look_from = least(coalesce(look_from, v_lost_from), v_lost_from)
    WHERE status IN ('pending', 'unknown');
    GET DIAGNOSTICS credits = ROW_COUNT;

    -- 078: a claim the database still holds may be the lost timeline's
    -- (its call made, or still on its way to MT5): not swept, so not
    -- looked up, before a call of that timeline has surely ended
    UPDATE mt5_credit
    SET lease_expires_at = greatest(lease_expires_at, clock_timestamp()
                              + make_interval(secs => p_lease_seconds))
    WHERE status = 'claimed';

    -- 037: which withdrawals the lost timeline may have debited
    INSERT INTO database_rewind (noticed_by, withdrawals_upto, detail,
                                 lost_from)
    VALUES (p_worker, coalesce((SELECT max(id) FROM withdrawal), 0),
            coalesce(p_detail, '{}'), v_lost_from)
    RETURNING id INTO rewind_id;

    -- 037: numbers the lost timeline gave out are never given again
    -- (corrections and withdrawals are still numbered)
    v_credit := setval(pg_get_serial_sequence('mt5credit.mt5_credit', 'id'),
                       greatest((SELECT max(id) FROM mt5_credit), 0)
                       + 1000000);
    v_wd := setval(pg_get_serial_sequence('mt5credit.withdrawal', 'id'),
                   greatest((SELECT max(id) FROM withdrawal), 0) + 1000000);

    -- 069: the events it acknowledged in the lost timeline, asked for
    v_asked := rewind_recover(rewind_id, v_lost_from, p_worker, p_severity);

    PERFORM open_case(p_kind, p_severity,
                      p_kind || ':' || rewind_id,
                      coalesce(p_detail, '{}')
                      || jsonb_build_object('worker', p_worker,
                                            'rewind', rewind_id,
                                            'credits_to_look_up', credits,
                                            'lost_from', v_lost_from,
                                            'backfills_asked', v_asked,
                                            'next_credit_from', v_credit + 1,
                                            'next_withdrawal_from', v_wd + 1,
                                            'seen_at', clock_timestamp()));
END
$$;


ALTER FUNCTION mt5credit.rewind_begin(p_worker text, p_lease_seconds integer, p_detail jsonb, p_kind text, p_severity text, OUT rewind_id bigint, OUT credits integer) OWNER TO mt5credit_owner;

--
-- Name: rewind_recover(bigint, timestamp with time zone, text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.rewind_recover(p_rewind bigint, p_lost_from timestamp with time zone, p_worker text, p_severity text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_since    timestamptz;
    v_oldest   timestamptz := clock_timestamp() - interval '30 days'
                              + interval '1 minute';
    v_clamped  boolean;
    v_n        integer := 0;
    p          record;
BEGIN
    v_since := p_lost_from - interval '1 hour';
    v_clamped := v_since < v_oldest;
    IF v_clamped THEN
        v_since := v_oldest;
    END IF;

    FOR p IN SELECT a.provider FROM provider_api a WHERE a.lists_events
             ORDER BY a.provider
    LOOP
        INSERT INTO backfill_request (provider, since, reason, requested_by,
                                      every_event)
        VALUES (p.provider, v_since,
                'the database went back in time (rewind ' || p_rewind
                || ', noticed by ' || p_worker || '): every event since '
                || v_since || ' is read again'
                || CASE WHEN v_clamped
                        THEN '; the loss began ' || p_lost_from
                             || ', further back than the provider keeps'
                        ELSE '' END,
                'database_rewound:' || p_worker, true);
        v_n := v_n + 1;
    END LOOP;

    FOR p IN SELECT x.provider
             FROM (SELECT d.provider FROM deposit d
                   WHERE d.created_at > clock_timestamp() - interval '30 days'
                   UNION
                   SELECT e.provider FROM webhook_event e
                   WHERE e.received_at > clock_timestamp() - interval '30 days'
                  ) x
             WHERE NOT EXISTS (SELECT 1 FROM provider_api a
                               WHERE a.provider = x.provider
                                 AND a.lists_events)
             ORDER BY x.provider
    LOOP
        PERFORM open_case('events_lost_in_rewind', p_severity,
                          'events_lost_in_rewind:' || p_rewind || ':'
                          || p.provider,
                          jsonb_build_object(
                              'provider', p.provider,
                              'rewind', p_rewind,
                              'lost_from', p_lost_from,
                              'do', 'have the provider send its events since '
                                    'lost_from again (its dashboard), or '
                                    'replay them: no program can list them'));
    END LOOP;

    RETURN v_n;
END
$$;


ALTER FUNCTION mt5credit.rewind_recover(p_rewind bigint, p_lost_from timestamp with time zone, p_worker text, p_severity text) OWNER TO mt5credit_owner;

--
-- Name: risk_check(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.risk_check() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    r         risk_rule;
    v_client  text;
    v_since   timestamptz := now() - interval '24 hours';
    v_n       bigint;
    v_sum     numeric;
    v_trips   jsonb := '[]';
    v_name    text;
    v_read    text[] := '{}';     -- the signed facts a rule judged
BEGIN
    -- no rule for this credit, nothing to judge: ingest pays one probe
    IF NOT EXISTS (SELECT 1 FROM risk_rule k
                   WHERE k.rule NOT IN ('withdrawal_amount',
                                        'withdrawal_trading')
                     AND (k.currency IS NULL OR k.currency = NEW.currency)
                     AND (k.provider IS NULL OR k.provider = NEW.provider))
    THEN
        NEW.payer_name := NULL;      -- kept only where a rule judges it
        NEW.instrument := NULL;
        NEW.provider_signal := NULL;
        RETURN NEW;
    END IF;

    SELECT d.client_id INTO STRICT v_client
    FROM deposit d WHERE d.id = NEW.deposit_id;

    -- a client's deposits are judged one at a time, each seeing the last
    PERFORM pg_advisory_xact_lock(
        hashtextextended('mt5credit.risk:' || v_client, 0));

    FOR r IN
        SELECT * FROM risk_rule k
        WHERE k.rule NOT IN ('withdrawal_amount', 'withdrawal_trading')
          AND (k.currency IS NULL OR k.currency = NEW.currency)
          AND (k.provider IS NULL OR k.provider = NEW.provider)
        ORDER BY k.rule, k.id
    LOOP
        IF r.rule = 'credit_amount' THEN
            IF NEW.amount_minor > r.limit_minor THEN
                v_trips := v_trips || risk_trip(r, NEW.amount_minor, NULL);
            END IF;

        ELSIF r.rule IN ('login_count_24h', 'login_sum_24h') THEN
            -- this credit and the login's others of the last 24 hours
            -- that were not refused
            SELECT count(*) + 1, coalesce(sum(c.amount_minor), 0)
                                 + NEW.amount_minor
            INTO v_n, v_sum
            FROM mt5_credit c
            WHERE c.mt5_server = NEW.mt5_server
              AND c.mt5_login = NEW.mt5_login
              AND c.kind = 'deposit' AND c.status <> 'failed'
              AND c.created_at > v_since
              AND (r.currency IS NULL OR c.currency = r.currency)
              AND (r.provider IS NULL OR c.provider = r.provider);
            IF r.rule = 'login_count_24h' AND v_n > r.limit_count THEN
                v_trips := v_trips || risk_trip(r, v_n,
                    jsonb_build_object('since', v_since));
            ELSIF r.rule = 'login_sum_24h' AND v_sum > r.limit_minor THEN
                v_trips := v_trips || risk_trip(r, v_sum,
                    jsonb_build_object('since', v_since, 'count', v_n));
            END IF;

        ELSIF r.rule IN ('client_count_24h', 'client_sum_24h') THEN
            -- from the client's deposits to their credits, never the
            -- other way (the day's every credit): OFFSET 0 keeps the
            -- planner from turning it round
            SELECT count(*) + 1, coalesce(sum(c.amount_minor), 0)
                                 + NEW.amount_minor
            INTO v_n, v_sum
            FROM deposit d
            CROSS JOIN LATERAL (
                SELECT k.amount_minor FROM mt5_credit k
                WHERE k.deposit_id = d.id AND k.kind = 'deposit'
                  AND k.status <> 'failed' AND k.created_at > v_since
                  AND (r.currency IS NULL OR k.currency = r.currency)
                  AND (r.provider IS NULL OR k.provider = r.provider)
                OFFSET 0) c
            WHERE d.client_id = v_client;
            IF r.rule = 'client_count_24h' AND v_n > r.limit_count THEN
                v_trips := v_trips || risk_trip(r, v_n,
                    jsonb_build_object('since', v_since, 'client', v_client));
            ELSIF r.rule = 'client_sum_24h' AND v_sum > r.limit_minor THEN
                v_trips := v_trips || risk_trip(r, v_sum,
                    jsonb_build_object('since', v_since, 'count', v_n,
                                       'client', v_client));
            END IF;

        ELSIF r.rule IN ('first_deposit', 'first_provider') THEN
            -- first: no deposit of the client has been credited yet (by
            -- this provider); a held or queued one does not count, so a
            -- second deposit made while the first waits is held too
            IF NOT EXISTS (
                SELECT 1 FROM deposit d
                CROSS JOIN LATERAL (
                    SELECT 1 FROM mt5_credit k
                    WHERE k.deposit_id = d.id AND k.kind = 'deposit'
                      AND k.status = 'done'
                      AND (r.rule = 'first_deposit'
                           OR k.provider = NEW.provider)
                    OFFSET 0) c
                WHERE d.client_id = v_client)
            THEN
                v_trips := v_trips || risk_trip(r, NULL,
                    jsonb_build_object('client', v_client));
            END IF;

        ELSIF r.rule = 'payer_name' THEN
            -- 082: a payer the provider signed for who is not the client
            -- on file (or no name is on file); no signed name, no
            -- judgement
            v_read := v_read || 'payer_name'::text;
            IF NEW.payer_name IS NOT NULL THEN
                SELECT n.name INTO v_name FROM client_name n
                WHERE n.client_id = v_client;
                IF v_name IS NULL OR NOT names_match(NEW.payer_name, v_name)
                THEN
                    v_trips := v_trips || risk_trip(r, NULL,
                        jsonb_build_object('client', v_client,
                                           'payer_name', NEW.payer_name,
                                           'client_name', v_name));
                END IF;
            END IF;

        ELSIF r.rule = 'first_instrument' THEN
            -- 082: a card (this provider's fingerprint of it) that none
            -- of the client's credited deposits was paid with
            v_read := v_read || 'instrument'::text;
            IF NEW.instrument IS NOT NULL AND NOT EXISTS (
                SELECT 1 FROM mt5_credit k
                JOIN deposit d ON d.id = k.deposit_id
                WHERE k.instrument = NEW.instrument
                  AND k.provider = NEW.provider AND k.kind = 'deposit'
                  AND k.status = 'done' AND d.client_id = v_client)
            THEN
                v_trips := v_trips || risk_trip(r, NULL,
                    jsonb_build_object('client', v_client,
                                       'instrument', NEW.instrument));
            END IF;

        ELSIF r.rule = 'provider_signal' THEN
            -- 082: the provider flagged the payment itself
            v_read := v_read || 'provider_signal'::text;
            IF NEW.provider_signal IS NOT NULL THEN
                v_trips := v_trips || risk_trip(r, NULL,
                    jsonb_build_object('signal', NEW.provider_signal));
            END IF;
        END IF;
    END LOOP;

    -- a signed fact no rule of this credit judged is not kept
    IF NOT 'payer_name' = ANY (v_read) THEN
        NEW.payer_name := NULL;
    END IF;
    IF NOT 'instrument' = ANY (v_read) THEN
        NEW.instrument := NULL;
    END IF;
    IF NOT 'provider_signal' = ANY (v_read) THEN
        NEW.provider_signal := NULL;
    END IF;

    IF jsonb_array_length(v_trips) > 0 THEN
        NEW.held_for := v_trips;
    END IF;
    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.risk_check() OWNER TO mt5credit_owner;

--
-- Name: risk_facts(text, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.risk_facts(p_provider text, p_type text, p_body jsonb) RETURNS mt5credit.risk_fact
    LANGUAGE plpgsql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    p        payload_risk;
    v_rules  text[];
    v_sig    text;
    v_out    risk_fact;
BEGIN
    -- the rules that read these facts, in one look
    SELECT array_agg(r.rule) INTO v_rules FROM risk_rule r
    WHERE r.rule IN ('payer_name', 'first_instrument', 'provider_signal');
    IF v_rules IS NULL THEN
        RETURN NULL;
    END IF;

    SELECT * INTO p FROM payload_risk k
    WHERE k.payload = coalesce((SELECT x.payload FROM provider_payload x
                                WHERE x.provider = p_provider), 'generic')
      AND k.event_type = p_type;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;

    IF 'payer_name' = ANY (v_rules) THEN
        v_out.payer_name := risk_value(payload_value(p_body, p.payer_name),
                                       200);
    END IF;
    IF 'first_instrument' = ANY (v_rules) THEN
        v_out.instrument := risk_value(payload_value(p_body, p.instrument),
                                       128);
    END IF;
    IF 'provider_signal' = ANY (v_rules) THEN
        v_sig := risk_value(payload_value(p_body, p.signal), 64);
        IF v_sig = ANY (p.signal_when) THEN
            v_out.provider_signal := v_sig;
        END IF;
    END IF;
    RETURN v_out;
END
$$;


ALTER FUNCTION mt5credit.risk_facts(p_provider text, p_type text, p_body jsonb) OWNER TO mt5credit_owner;

--
-- Name: risk_facts_wanted(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.risk_facts_wanted() RETURNS boolean
    LANGUAGE sql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT EXISTS (SELECT 1 FROM risk_rule r
                   WHERE r.rule IN ('payer_name', 'first_instrument',
                                    'provider_signal'))
$$;


ALTER FUNCTION mt5credit.risk_facts_wanted() OWNER TO mt5credit_owner;

--
-- Name: risk_limit_text(bigint, integer, bigint, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.risk_limit_text(p_minor bigint, p_count integer, p_volume bigint, p_currency text) RETURNS text
    LANGUAGE sql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT coalesce(p_count::text,
                    trim_scale(p_volume / 10000.0)::text,
                    (SELECT trim_scale(p_minor
                                       / (10::numeric ^ k.minor_digits))::text
                     FROM currency k WHERE k.code = p_currency))
$$;


ALTER FUNCTION mt5credit.risk_limit_text(p_minor bigint, p_count integer, p_volume bigint, p_currency text) OWNER TO mt5credit_owner;

--
-- Name: risk_rule_change_guard(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.risk_rule_change_guard() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    IF (NEW.rule, NEW.currency, NEW.provider, NEW.limit_minor,
        NEW.limit_count, NEW.limit_volume, NEW.remove, NEW.note,
        NEW.proposed_by, NEW.proposed_at)
       IS DISTINCT FROM
       (OLD.rule, OLD.currency, OLD.provider, OLD.limit_minor,
        OLD.limit_count, OLD.limit_volume, OLD.remove, OLD.note,
        OLD.proposed_by, OLD.proposed_at)
    THEN
        RAISE EXCEPTION 'rule change % cannot change after it was made: '
                        'withdraw it and propose again', OLD.id
            USING ERRCODE = 'MC040';
    END IF;
    IF OLD.status <> 'proposed' THEN
        RAISE EXCEPTION 'rule change % was already %', OLD.id, OLD.status
            USING ERRCODE = 'MC041';
    END IF;
    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.risk_rule_change_guard() OWNER TO mt5credit_owner;

--
-- Name: risk_rule_changes(integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.risk_rule_changes(p_limit integer) RETURNS TABLE(id bigint, status text, rule text, currency text, provider text, limit_text text, remove boolean, note text, proposed_by text, proposed_at timestamp with time zone, decided_by text, decided_at timestamp with time zone, decision_note text, rule_before jsonb)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT c.id, c.status, c.rule, c.currency, c.provider,
           risk_limit_text(c.limit_minor, c.limit_count, c.limit_volume,
                           c.currency),
           c.remove, c.note, c.proposed_by, c.proposed_at, c.decided_by,
           c.decided_at, c.decision_note, c.rule_before
    FROM risk_rule_change c
    ORDER BY c.id DESC
    LIMIT least(greatest(coalesce(p_limit, 50), 1), 1000)
$$;


ALTER FUNCTION mt5credit.risk_rule_changes(p_limit integer) OWNER TO mt5credit_owner;

--
-- Name: risk_rule_decide(bigint, text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.risk_rule_decide(p_change bigint, p_decision text, p_note text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    c       risk_rule_change;
    v_old   risk_rule;
    v_rule  bigint;
BEGIN
    SELECT * INTO c FROM risk_rule_change WHERE id = p_change FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no rule change %', p_change USING ERRCODE = 'MC044';
    END IF;
    PERFORM decision_allowed('rule change ' || c.id, c.status,
                             c.proposed_by, p_decision);

    IF p_decision = 'approve' THEN
        SELECT * INTO v_old FROM risk_rule r
        WHERE r.rule = c.rule
          AND r.currency IS NOT DISTINCT FROM c.currency
          AND r.provider IS NOT DISTINCT FROM c.provider
        FOR UPDATE;

        IF c.remove THEN
            IF v_old.id IS NULL THEN
                RAISE EXCEPTION 'rule change %: no such rule is in force '
                                'any more', c.id
                    USING ERRCODE = 'MC048';
            END IF;
            DELETE FROM risk_rule WHERE id = v_old.id;
        ELSE
            INSERT INTO risk_rule (rule, currency, provider, limit_minor,
                                   limit_count, limit_volume, change_id)
            VALUES (c.rule, c.currency, c.provider, c.limit_minor,
                    c.limit_count, c.limit_volume, c.id)
            ON CONFLICT (rule, currency, provider) DO UPDATE
            SET limit_minor = EXCLUDED.limit_minor,
                limit_count = EXCLUDED.limit_count,
                limit_volume = EXCLUDED.limit_volume,
                change_id = EXCLUDED.change_id
            RETURNING id INTO v_rule;
        END IF;
    END IF;

    UPDATE risk_rule_change
    SET status = CASE p_decision WHEN 'approve' THEN 'approved'
                                 WHEN 'reject' THEN 'rejected'
                                 ELSE 'withdrawn' END,
        decided_by = mt5credit.person(), decided_at = clock_timestamp(),
        decision_note = p_note,
        rule_before = CASE WHEN v_old.id IS NOT NULL
                           THEN to_jsonb(v_old) END
    WHERE id = c.id AND status = 'proposed';
    RETURN v_rule;
END
$$;


ALTER FUNCTION mt5credit.risk_rule_decide(p_change bigint, p_decision text, p_note text) OWNER TO mt5credit_owner;

--
-- Name: risk_rule_propose(text, text, text, text, boolean, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.risk_rule_propose(p_rule text, p_currency text, p_provider text, p_limit text, p_remove boolean, p_note text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $_$
DECLARE
    v_minor   bigint;
    v_count   integer;
    v_volume  bigint;
    v_id      bigint;
BEGIN
    IF coalesce(p_remove, false) THEN
        IF p_limit IS NOT NULL THEN
            RAISE EXCEPTION 'removing a rule takes no limit'
                USING ERRCODE = 'MC048';
        END IF;
        IF NOT EXISTS (SELECT 1 FROM risk_rule r
                       WHERE r.rule = p_rule
                         AND r.currency IS NOT DISTINCT FROM p_currency
                         AND r.provider IS NOT DISTINCT FROM p_provider)
        THEN
            RAISE EXCEPTION 'no rule % for currency % and provider % to '
                            'remove', p_rule, coalesce(p_currency, 'any'),
                            coalesce(p_provider, 'any')
                USING ERRCODE = 'MC048';
        END IF;
    ELSIF p_rule IN ('credit_amount', 'login_sum_24h', 'client_sum_24h',
                     'withdrawal_amount')
    THEN
        v_minor := exact_minor(p_limit, p_currency, 'rule ' || p_rule,
                               '5000.00');
    ELSIF p_rule IN ('login_count_24h', 'client_count_24h') THEN
        IF p_limit IS NULL OR p_limit !~ '^[1-9][0-9]{0,5}$' THEN
            RAISE EXCEPTION 'rule % needs a count like 3, not "%"',
                            p_rule, coalesce(p_limit, '')
                USING ERRCODE = 'MC048';
        END IF;
        v_count := p_limit::integer;
    ELSIF p_rule = 'withdrawal_trading' THEN
        v_volume := exact_volume(p_limit, 'rule ' || p_rule);
    ELSIF p_rule IN ('first_deposit', 'first_provider', 'payer_name',
                     'first_instrument', 'provider_signal')
    THEN
        IF p_limit IS NOT NULL THEN
            RAISE EXCEPTION 'rule % takes no limit', p_rule
                USING ERRCODE = 'MC048';
        END IF;
    ELSE
        RAISE EXCEPTION 'no risk rule "%"', coalesce(p_rule, '')
            USING ERRCODE = 'MC048';
    END IF;

    INSERT INTO risk_rule_change (rule, currency, provider, limit_minor,
                                  limit_count, limit_volume, remove, note,
                                  proposed_by)
    VALUES (p_rule, p_currency, p_provider, v_minor, v_count, v_volume,
            coalesce(p_remove, false), p_note, mt5credit.person())
    RETURNING id INTO v_id;
    RETURN v_id;
END
$_$;


ALTER FUNCTION mt5credit.risk_rule_propose(p_rule text, p_currency text, p_provider text, p_limit text, p_remove boolean, p_note text) OWNER TO mt5credit_owner;

--
-- Name: risk_rules(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.risk_rules() RETURNS TABLE(rule text, currency text, provider text, limit_text text, change_id bigint, proposed_by text, approved_by text, approved_at timestamp with time zone)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT r.rule, r.currency, r.provider,
           risk_limit_text(r.limit_minor, r.limit_count, r.limit_volume,
                           r.currency),
           r.change_id, c.proposed_by, c.decided_by, c.decided_at
    FROM risk_rule r
    JOIN risk_rule_change c ON c.id = r.change_id
    ORDER BY r.rule, r.currency NULLS FIRST, r.provider NULLS FIRST
$$;


ALTER FUNCTION mt5credit.risk_rules() OWNER TO mt5credit_owner;

--
-- Name: risk_rule; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.risk_rule (
    id bigint NOT NULL,
    rule text NOT NULL,
    currency text,
    provider text,
    limit_minor bigint,
    limit_count integer,
    change_id bigint NOT NULL,
    limit_volume bigint,
    CONSTRAINT risk_rule_check CHECK (((limit_minor IS NOT NULL) = (rule = ANY (ARRAY['credit_amount'::text, 'login_sum_24h'::text, 'client_sum_24h'::text, 'withdrawal_amount'::text])))),
    CONSTRAINT risk_rule_check1 CHECK (((limit_count IS NOT NULL) = (rule = ANY (ARRAY['login_count_24h'::text, 'client_count_24h'::text])))),
    CONSTRAINT risk_rule_check2 CHECK (((rule <> ALL (ARRAY['credit_amount'::text, 'login_sum_24h'::text, 'client_sum_24h'::text, 'withdrawal_amount'::text])) OR (currency IS NOT NULL))),
    CONSTRAINT risk_rule_limit_count_check CHECK ((limit_count > 0)),
    CONSTRAINT risk_rule_limit_minor_check CHECK ((limit_minor > 0)),
    CONSTRAINT risk_rule_limit_volume_check CHECK ((limit_volume > 0)),
    CONSTRAINT risk_rule_volume CHECK (((limit_volume IS NOT NULL) = (rule = 'withdrawal_trading'::text)))
);


ALTER TABLE mt5credit.risk_rule OWNER TO mt5credit_owner;

--
-- Name: TABLE risk_rule; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.risk_rule IS 'The risk rules in force (079): each applies to deposits credited in its currency and through its provider, NULL meaning any.  A rule''s limit is the most that passes.';


--
-- Name: COLUMN risk_rule.limit_volume; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.risk_rule.limit_volume IS 'withdrawal_trading''s least volume, in MT5''s unit of 1/10000 lot (080): less traded since the last deposit holds the withdrawal.';


--
-- Name: risk_trip(mt5credit.risk_rule, numeric, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.risk_trip(r mt5credit.risk_rule, p_observed numeric, p_detail jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object(
               'rule', r.rule, 'rule_id', r.id, 'change', r.change_id,
               'currency', r.currency, 'provider', r.provider,
               'limit_minor', r.limit_minor, 'limit_count', r.limit_count,
               'limit_volume', r.limit_volume, 'observed', p_observed))
           || coalesce(p_detail, '{}')
$$;


ALTER FUNCTION mt5credit.risk_trip(r mt5credit.risk_rule, p_observed numeric, p_detail jsonb) OWNER TO mt5credit_owner;

--
-- Name: risk_value(jsonb, integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.risk_value(p jsonb, p_max integer) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT CASE WHEN jsonb_typeof(p) = 'boolean' THEN p #>> '{}'
                WHEN jsonb_typeof(p) = 'string'
                     AND length(p #>> '{}') BETWEEN 1 AND p_max
                THEN p #>> '{}' END
$$;


ALTER FUNCTION mt5credit.risk_value(p jsonb, p_max integer) OWNER TO mt5credit_owner;

--
-- Name: rule_facts(text, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.rule_facts(p_payload text, p_type text, p_body jsonb) RETURNS SETOF mt5credit.payment_fact
    LANGUAGE plpgsql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    r       payload_rule;
    v_cur   text;
    v_amt   bigint;
    v_key   text;
    v_got   numeric;
    v_bad   boolean;
    v_note  text;
    x       jsonb;
BEGIN
    FOR r IN SELECT * FROM payload_rule
             WHERE payload = p_payload AND event_type = p_type
             ORDER BY step
    LOOP
        CONTINUE WHEN r.only_if IS NOT NULL
            AND jsonb_path_match(p_body, r.only_if, '{}', true)
                IS NOT TRUE;

        v_cur := upper(json_text(payload_value(p_body, r.currency)));
        v_amt := payload_amount(payload_value(p_body, r.amount),
                                r.amount_form, v_cur);
        v_key := r.key_prefix || json_text(payload_value(p_body, r.payment))
                 || r.key_suffix;
        v_note := coalesce(json_text(payload_value(p_body, r.note)),
                           r.note_text,
                           CASE WHEN r.action IN ('pending', 'failed',
                                                  'expired')
                                THEN p_type END);

        -- what was received, read as the amount is, summed exactly
        IF r.received IS NOT NULL AND v_amt IS NOT NULL THEN
            v_got := 0;
            v_bad := false;
            FOR x IN SELECT * FROM jsonb_path_query(p_body, r.received,
                                                    '{}', true)
            LOOP
                v_bad := v_bad OR payload_amount(x, r.amount_form, v_cur)
                                  IS NULL;
                v_got := v_got + coalesce(payload_amount(x, r.amount_form,
                                                         v_cur), 0);
            END LOOP;

            IF v_bad OR v_got <> v_amt THEN
                RETURN NEXT ('review', v_key, NULL,
                             json_text(payload_value(p_body, r.deposit)),
                             v_amt, v_cur,
                             p_type || ': received '
                             || CASE WHEN v_bad THEN 'an amount not in '
                                     || v_cur ELSE v_got || '' END
                             || ' minor units, asked ' || v_amt
                            )::payment_fact;
                RETURN;
            END IF;
        END IF;

        RETURN NEXT (r.action, v_key,
                     json_text(payload_value(p_body, r.original)),
                     json_text(payload_value(p_body, r.deposit)),
                     v_amt, v_cur, v_note)::payment_fact;
        RETURN;
    END LOOP;

    RETURN NEXT ('ignore', NULL, NULL, NULL, NULL, NULL,
                 'event type not mapped')::payment_fact;
END
$$;


ALTER FUNCTION mt5credit.rule_facts(p_payload text, p_type text, p_body jsonb) OWNER TO mt5credit_owner;

--
-- Name: set_actor(text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.set_actor(p_actor text, p_detail jsonb) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM set_config('mt5credit.actor', left(p_actor, 200), true);
    PERFORM set_config('mt5credit.detail',
                       coalesce(p_detail, '{}'::jsonb)::text, true);
END
$$;


ALTER FUNCTION mt5credit.set_actor(p_actor text, p_detail jsonb) OWNER TO mt5credit_owner;

--
-- Name: settle_refused(bigint, integer, bigint, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.settle_refused(p_id bigint, p_attempt integer, p_ticket bigint, p_worker text, p_detail jsonb) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    p  money_proposal := settle_request_held(p_id, p_attempt, p_ticket);
    c  "case";
BEGIN
    IF p.id IS NULL THEN
        RETURN false;
    END IF;

    INSERT INTO settle_verification (proposal_id, credit_id, deal_ticket,
                                     outcome, detail, verified_by)
    VALUES (p.id, p_id, p_ticket, 'refused', coalesce(p_detail, '{}'),
            p_worker);

    -- back to a person; the resolver's lookups (and alerts) resume
    SELECT * INTO c FROM "case" WHERE id = p.case_id FOR UPDATE;
    UPDATE "case"
    SET status = CASE WHEN c.assigned_to IS NOT NULL THEN 'assigned'
                      ELSE 'open' END
    WHERE id = c.id AND status = 'pending_resolution';

    INSERT INTO case_action (case_id, action, actor, before, after, note)
    VALUES (c.id, 'verify', p_worker,
            jsonb_build_object('status', c.status, 'proposal', p.id),
            jsonb_build_object('credit_status', 'unknown', 'deal', p_ticket,
                               'refused', coalesce(p_detail, '{}')),
            'deal ' || p_ticket || ' is not this credit''s: nothing '
            || 'recorded, the credit stays unknown');
    RETURN true;
END
$$;


ALTER FUNCTION mt5credit.settle_refused(p_id bigint, p_attempt integer, p_ticket bigint, p_worker text, p_detail jsonb) OWNER TO mt5credit_owner;

--
-- Name: money_proposal; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.money_proposal (
    id bigint NOT NULL,
    case_id bigint NOT NULL,
    action text NOT NULL,
    credit_id bigint,
    amount_minor bigint,
    currency text,
    note text NOT NULL,
    evidence jsonb DEFAULT '[]'::jsonb NOT NULL,
    proposed_by text NOT NULL,
    proposed_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    status text DEFAULT 'proposed'::text NOT NULL,
    decided_by text,
    decided_at timestamp with time zone,
    decision_note text,
    result_credit_id bigint,
    deal_ticket bigint,
    withdrawal_id bigint,
    CONSTRAINT money_proposal_action_check CHECK ((action = ANY (ARRAY['requeue_credit'::text, 'correcting_credit'::text, 'correcting_debit'::text, 'settle_failed'::text, 'settle_done'::text, 'release_hold'::text, 'return_hold'::text]))),
    CONSTRAINT money_proposal_amount_for_corrections CHECK (((action = ANY (ARRAY['correcting_credit'::text, 'correcting_debit'::text])) = ((amount_minor IS NOT NULL) AND (currency IS NOT NULL)))),
    CONSTRAINT money_proposal_amount_minor_check CHECK ((amount_minor > 0)),
    CONSTRAINT money_proposal_check1 CHECK (((status = 'proposed'::text) = ((decided_by IS NULL) AND (decided_at IS NULL)))),
    CONSTRAINT money_proposal_check2 CHECK (((status <> 'withdrawn'::text) OR (decided_by = proposed_by))),
    CONSTRAINT money_proposal_deal_ticket_check CHECK ((deal_ticket > 0)),
    CONSTRAINT money_proposal_evidence_check CHECK ((jsonb_typeof(evidence) = 'array'::text)),
    CONSTRAINT money_proposal_four_eyes CHECK (((status = ANY (ARRAY['proposed'::text, 'withdrawn'::text])) OR (decided_by <> proposed_by))),
    CONSTRAINT money_proposal_note_check CHECK (((length(note) >= 1) AND (length(note) <= 4000))),
    CONSTRAINT money_proposal_one_subject CHECK (((credit_id IS NULL) <> (withdrawal_id IS NULL))),
    CONSTRAINT money_proposal_result_for_corrections CHECK (((result_credit_id IS NOT NULL) = ((status = 'approved'::text) AND (action = ANY (ARRAY['correcting_credit'::text, 'correcting_debit'::text]))))),
    CONSTRAINT money_proposal_settle_has_evidence CHECK (((action <> ALL (ARRAY['settle_failed'::text, 'settle_done'::text])) OR (jsonb_array_length(evidence) > 0))),
    CONSTRAINT money_proposal_status_check CHECK ((status = ANY (ARRAY['proposed'::text, 'approved'::text, 'rejected'::text, 'withdrawn'::text]))),
    CONSTRAINT money_proposal_ticket_for_settle_done CHECK (((action = 'settle_done'::text) = (deal_ticket IS NOT NULL))),
    CONSTRAINT money_proposal_withdrawal_holds_only CHECK (((withdrawal_id IS NULL) OR (action = ANY (ARRAY['release_hold'::text, 'return_hold'::text]))))
);


ALTER TABLE mt5credit.money_proposal OWNER TO mt5credit_owner;

--
-- Name: TABLE money_proposal; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.money_proposal IS 'Money-moving decisions on a case: proposed by one person, approved or rejected by another; nothing moves before approval.';


--
-- Name: COLUMN money_proposal.deal_ticket; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.money_proposal.deal_ticket IS 'settle_done only: the MT5 deal two people say is the credit''s own; recorded only after the worker verified it (settle_verification)';


--
-- Name: settle_request(bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.settle_request(p_credit bigint) RETURNS mt5credit.money_proposal
    LANGUAGE sql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT p.* FROM money_proposal p
    WHERE p.credit_id = p_credit AND p.action = 'settle_done'
      AND p.status = 'approved'
      AND NOT EXISTS (SELECT 1 FROM settle_verification v
                      WHERE v.proposal_id = p.id)
    ORDER BY p.id DESC
    LIMIT 1
$$;


ALTER FUNCTION mt5credit.settle_request(p_credit bigint) OWNER TO mt5credit_owner;

--
-- Name: settle_request_held(bigint, integer, bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.settle_request_held(p_id bigint, p_attempt integer, p_ticket bigint) RETURNS mt5credit.money_proposal
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    p  money_proposal;
BEGIN
    PERFORM 1 FROM mt5_credit
    WHERE id = p_id AND status = 'unknown' AND attempts = p_attempt
    FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    p := settle_request(p_id);
    RETURN CASE WHEN p.deal_ticket = p_ticket THEN p END;
END
$$;


ALTER FUNCTION mt5credit.settle_request_held(p_id bigint, p_attempt integer, p_ticket bigint) OWNER TO mt5credit_owner;

--
-- Name: settle_verified(bigint, integer, bigint, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.settle_verified(p_id bigint, p_attempt integer, p_ticket bigint, p_worker text, p_detail jsonb) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_cr    mt5_credit;
    p       money_proposal := settle_request_held(p_id, p_attempt, p_ticket);
    v_held  bigint;
BEGIN
    IF p.id IS NULL THEN
        RETURN false;
    END IF;
    SELECT * INTO STRICT v_cr FROM mt5_credit WHERE id = p_id;

    -- held by another credit since it was proposed: refused, not recorded
    SELECT id INTO v_held FROM mt5_credit
    WHERE mt5_server = v_cr.mt5_server AND mt5_deal_ticket = p_ticket;
    IF FOUND THEN
        RETURN settle_refused(p_id, p_attempt, p_ticket, p_worker,
            coalesce(p_detail, '{}')
            || jsonb_build_object('refused', 'deal ' || p_ticket
                                  || ' is credit ' || v_held || '''s'));
    END IF;

    PERFORM set_actor(p_worker, coalesce(p_detail, '{}')
        || jsonb_build_object('proposal', p.id, 'case', p.case_id,
                              'proposed_by', p.proposed_by,
                              'approved_by', p.decided_by));
    UPDATE mt5_credit
    SET status = 'done', mt5_deal_ticket = p_ticket, next_check_at = NULL
    WHERE id = p_id AND status = 'unknown' AND attempts = p_attempt;

    INSERT INTO settle_verification (proposal_id, credit_id, deal_ticket,
                                     outcome, detail, verified_by)
    VALUES (p.id, p_id, p_ticket, 'verified', coalesce(p_detail, '{}'),
            p_worker);

    INSERT INTO case_action (case_id, action, actor, before, after, note)
    VALUES (p.case_id, 'verify', p_worker,
            jsonb_build_object('credit_status', 'unknown'),
            jsonb_build_object('credit_status', 'done', 'deal', p_ticket,
                               'proposal', p.id),
            'MT5 shows deal ' || p_ticket || ' as this credit''s: recorded');
    RETURN true;
END
$$;


ALTER FUNCTION mt5credit.settle_verified(p_id bigint, p_attempt integer, p_ticket bigint, p_worker text, p_detail jsonb) OWNER TO mt5credit_owner;

--
-- Name: status_facts(text, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.status_facts(p_provider text, p_type text, p_body jsonb) RETURNS SETOF mt5credit.payment_fact
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    o       jsonb;
    v_act   text;
BEGIN
    IF p_provider = 'stripe' THEN
        o := p_body #> '{data,object}';
        IF jsonb_typeof(o) IS DISTINCT FROM 'object' THEN
            RETURN;
        END IF;

        v_act := CASE
            WHEN p_type = 'checkout.session.completed'
                 AND o->>'payment_status' = 'unpaid' THEN 'pending'
            WHEN p_type = 'checkout.session.async_payment_failed'
                THEN 'failed'
            WHEN p_type = 'checkout.session.expired' THEN 'expired'
            WHEN p_type = 'payment_intent.processing' THEN 'pending'
            WHEN p_type = 'payment_intent.payment_failed' THEN 'failed'
            WHEN p_type = 'payment_intent.canceled' THEN 'expired'
            END;
        IF v_act IS NULL THEN
            RETURN;
        END IF;

        RETURN NEXT (v_act,
                     CASE WHEN o->>'object' = 'payment_intent'
                          THEN json_text(o->'id')
                          ELSE json_text(o->'payment_intent') END,
                     NULL,
                     coalesce(json_text(o->'client_reference_id'),
                              json_text(o #> '{metadata,deposit_id}')),
                     NULL, upper(json_text(o->'currency')),
                     p_type)::payment_fact;
        RETURN;
    END IF;

    v_act := CASE p_type
        WHEN 'payment.pending' THEN 'pending'
        WHEN 'payment.failed' THEN 'failed'
        WHEN 'payment.expired' THEN 'expired'
        END;
    IF v_act IS NOT NULL THEN
        RETURN NEXT (v_act, json_text(p_body #> '{data,payment_id}'), NULL,
                     json_text(p_body #> '{data,deposit_reference}'), NULL,
                     upper(json_text(p_body #> '{data,currency}')),
                     p_type)::payment_fact;
    END IF;
END
$$;


ALTER FUNCTION mt5credit.status_facts(p_provider text, p_type text, p_body jsonb) OWNER TO mt5credit_owner;

--
-- Name: step_up_digest(text, text[]); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.step_up_digest(p_action text, VARIADIC p_args text[]) RETURNS text
    LANGUAGE sql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT encode(sha256(convert_to(
        (jsonb_build_array(person(), p_action) || to_jsonb(p_args))::text,
        'UTF8')), 'hex')
$$;


ALTER FUNCTION mt5credit.step_up_digest(p_action text, VARIADIC p_args text[]) OWNER TO mt5credit_owner;

--
-- Name: step_up_locked_until(regclass); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.step_up_locked_until(p_tries regclass) RETURNS timestamp with time zone
    LANGUAGE sql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT to_timestamp(coalesce(pg_sequence_last_value(p_tries), 0)
                        - 4 * 900)
$$;


ALTER FUNCTION mt5credit.step_up_locked_until(p_tries regclass) OWNER TO mt5credit_owner;

--
-- Name: step_up_needed(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.step_up_needed() RETURNS boolean
    LANGUAGE sql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT current_setting('role') <> 'none'
           OR (pg_has_role(session_user, 'mt5credit_console', 'MEMBER')
               AND NOT (SELECT rolsuper FROM pg_roles
                        WHERE rolname = session_user))
$$;


ALTER FUNCTION mt5credit.step_up_needed() OWNER TO mt5credit_owner;

--
-- Name: step_up_refuse(text, text, text, text, integer, timestamp with time zone); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.step_up_refuse(p_action text, p_digest text, p_reason text, p_detail text, p_tries_left integer, p_locked_until timestamp with time zone) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    INSERT INTO person_step_up_refusal (person, action, digest, reason,
                                        tries_left, locked_until)
    VALUES (person(), p_action, p_digest, p_reason, p_tries_left,
            p_locked_until);

    RETURN jsonb_build_object('error', 'second_factor',
                              'reason', p_reason,
                              'detail', p_detail,
                              'action', p_action,
                              'tries_left', p_tries_left,
                              'locked_until', p_locked_until);
END
$$;


ALTER FUNCTION mt5credit.step_up_refuse(p_action text, p_digest text, p_reason text, p_detail text, p_tries_left integer, p_locked_until timestamp with time zone) OWNER TO mt5credit_owner;

--
-- Name: step_up_require(text, text[]); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.step_up_require(p_action text, VARIADIC p_args text[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_rows  integer;
BEGIN
    IF NOT step_up_needed() THEN
        RETURN;
    END IF;

    UPDATE person_step_up SET used_at = clock_timestamp()
    WHERE person = person()
      AND digest = step_up_digest(p_action, VARIADIC p_args)
      AND xact = pg_current_xact_id()
      AND used_at IS NULL;
    GET DIAGNOSTICS v_rows = ROW_COUNT;

    IF v_rows <> 1 THEN
        RAISE EXCEPTION '%: % through the console needs the person''s '
                        'second factor, verified for this action in this '
                        'transaction (console_act with "code")',
                        person(), p_action
            USING ERRCODE = 'MC140';
    END IF;
END
$$;


ALTER FUNCTION mt5credit.step_up_require(p_action text, VARIADIC p_args text[]) OWNER TO mt5credit_owner;

--
-- Name: step_up_spend(regclass); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.step_up_spend(p_tries regclass) RETURNS void
    LANGUAGE sql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT setval(p_tries,
                  greatest(coalesce(pg_sequence_last_value(p_tries), 0),
                           floor(extract(epoch FROM clock_timestamp()))
                               ::bigint)
                  + 900)
$$;


ALTER FUNCTION mt5credit.step_up_spend(p_tries regclass) OWNER TO mt5credit_owner;

--
-- Name: step_up_tries_left(regclass); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.step_up_tries_left(p_tries regclass) RETURNS integer
    LANGUAGE sql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT greatest(0, 5 - ceil(greatest(0,
               coalesce(pg_sequence_last_value(p_tries), 0)
               - floor(extract(epoch FROM clock_timestamp()))) / 900.0)
                           ::integer)
$$;


ALTER FUNCTION mt5credit.step_up_tries_left(p_tries regclass) OWNER TO mt5credit_owner;

--
-- Name: step_up_verify(text, text, text[]); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.step_up_verify(p_code text, p_action text, VARIADIC p_args text[]) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $_$
DECLARE
    v_person  text := person();
    v_digest  text := step_up_digest(p_action, VARIADIC p_args);
    t         person_totp;
    v_now     bigint := floor(extract(epoch FROM clock_timestamp()) / 30);
    v_step    bigint;
    v_left    integer;
    v_rows    integer;
BEGIN
    SELECT * INTO t FROM person_totp
    WHERE person = (SELECT oid FROM pg_roles WHERE rolname = v_person)
    FOR UPDATE;

    IF NOT FOUND THEN
        RETURN step_up_refuse(p_action, v_digest, 'not_enrolled',
            format('%s has no second factor: a person admin enrols them '
                   '(mt5credit persons enrol %s); until then they cannot '
                   'do this through the console', v_person, v_person),
            NULL, NULL);
    END IF;

    IF step_up_tries_left(t.tries) = 0 THEN
        RETURN step_up_refuse(p_action, v_digest, 'locked',
            format('too many wrong codes: %s''s step-up is locked until %s',
                   v_person, step_up_locked_until(t.tries)),
            0, step_up_locked_until(t.tries));
    END IF;

    IF p_code IS NULL OR p_code !~ '^[0-9]{6}$' THEN
        RETURN step_up_refuse(p_action, v_digest, 'no_code',
            'this action needs the 6-digit code of your authenticator app',
            step_up_tries_left(t.tries), NULL);
    END IF;

    -- the current step and one either side (clocks drift, people type)
    SELECT s INTO v_step
    FROM generate_series(v_now - 1, v_now + 1) s
    WHERE totp_code(t.secret, s) = p_code
    ORDER BY s DESC LIMIT 1;

    IF v_step IS NULL OR v_step <= t.last_step THEN
        PERFORM step_up_spend(t.tries);
        v_left := step_up_tries_left(t.tries);
        RETURN step_up_refuse(p_action, v_digest,
            CASE WHEN v_step IS NULL THEN 'wrong_code' ELSE 'code_used' END,
            CASE WHEN v_step IS NULL THEN 'wrong code'
                 ELSE 'this code was used already: wait for the next' END
            || CASE WHEN v_left = 0
                    THEN format(': step-up is locked until %s',
                                step_up_locked_until(t.tries))
                    ELSE format(' (%s tries left)', v_left) END,
            v_left,
            CASE WHEN v_left = 0 THEN step_up_locked_until(t.tries) END);
    END IF;

    UPDATE person_totp SET last_step = v_step
    WHERE person = t.person AND last_step < v_step;
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    IF v_rows <> 1 THEN
        RAISE EXCEPTION 'step-up of %: step % taken under us', v_person,
                        v_step USING ERRCODE = 'MC140';
    END IF;

    INSERT INTO person_step_up (person, step, action, digest, xact)
    VALUES (v_person, v_step, p_action, v_digest, pg_current_xact_id());

    RETURN NULL;
END
$_$;


ALTER FUNCTION mt5credit.step_up_verify(p_code text, p_action text, VARIADIC p_args text[]) OWNER TO mt5credit_owner;

--
-- Name: stripe_facts(text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.stripe_facts(p_type text, p_body jsonb) RETURNS SETOF mt5credit.payment_fact
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    o    jsonb := p_body #> '{data,object}';
    r    jsonb;
    ref  text;
BEGIN
    IF jsonb_typeof(o) IS DISTINCT FROM 'object' THEN
        RETURN NEXT ('ignore', NULL, NULL, NULL, NULL, NULL,
                     'no data.object')::payment_fact;
        RETURN;
    END IF;

    CASE p_type
    WHEN 'checkout.session.completed',
         'checkout.session.async_payment_succeeded'
    THEN
        IF o->>'payment_status' IS DISTINCT FROM 'paid' THEN
            RETURN NEXT ('ignore', NULL, NULL, NULL, NULL, NULL,
                         'payment_status is '
                         || coalesce(o->>'payment_status', 'absent')
                         || ': money not confirmed yet')::payment_fact;
            RETURN;
        END IF;

        RETURN NEXT ('paid', json_text(o->'payment_intent'), NULL,
                     coalesce(json_text(o->'client_reference_id'),
                              json_text(o #> '{metadata,deposit_id}')),
                     json_minor(o->'amount_total'),
                     upper(json_text(o->'currency')),
                     'checkout session ' || coalesce(o->>'id', '?')
                    )::payment_fact;

    WHEN 'payment_intent.succeeded' THEN
        ref := json_text(o #> '{metadata,deposit_id}');

        IF o->>'status' IS DISTINCT FROM 'succeeded' OR ref IS NULL THEN
            -- a PaymentIntent made by Checkout carries no metadata unless
            -- the integration copies it; its checkout.session event will
            RETURN NEXT ('ignore', NULL, NULL, NULL, NULL, NULL,
                         'PaymentIntent without metadata.deposit_id: '
                         'the checkout.session event credits it'
                        )::payment_fact;
            RETURN;
        END IF;

        RETURN NEXT ('paid', json_text(o->'id'), NULL, ref,
                     json_minor(o->'amount_received'),
                     upper(json_text(o->'currency')),
                     'payment intent')::payment_fact;

    WHEN 'charge.refunded' THEN
        IF jsonb_typeof(o #> '{refunds,data}') = 'array' THEN
            FOR r IN SELECT * FROM jsonb_array_elements(o #> '{refunds,data}')
            LOOP
                IF r #> '{metadata,mt5credit_withdrawal}' IS NOT NULL THEN
                    RETURN NEXT stripe_leg_fact(r, o->'payment_intent');
                    CONTINUE;
                END IF;
                CONTINUE WHEN r->>'status' IS DISTINCT FROM 'succeeded';

                RETURN NEXT ('refund', json_text(r->'id'),
                             json_text(o->'payment_intent'), NULL,
                             json_minor(r->'amount'),
                             upper(json_text(r->'currency')),
                             'refund of charge ' || coalesce(o->>'id', '?')
                            )::payment_fact;
            END LOOP;
            RETURN;
        END IF;

        RETURN NEXT ('refund_total',
                     json_text(o->'id') || ':refunded:'
                         || json_minor(o->'amount_refunded'),
                     json_text(o->'payment_intent'), NULL,
                     json_minor(o->'amount_refunded'),
                     upper(json_text(o->'currency')),
                     'cumulative amount_refunded of charge '
                     || coalesce(o->>'id', '?'))::payment_fact;

    WHEN 'refund.created', 'refund.updated', 'refund.failed' THEN
        IF o #> '{metadata,mt5credit_withdrawal}' IS NOT NULL THEN
            RETURN NEXT stripe_leg_fact(o, o->'payment_intent');
            RETURN;
        END IF;
        RETURN NEXT ('ignore', NULL, NULL, NULL, NULL, NULL,
                     'a refund event: the charge''s charge.refunded debits '
                     'a refund, once')::payment_fact;

    WHEN 'charge.dispute.funds_withdrawn', 'charge.dispute.closed' THEN
        IF p_type = 'charge.dispute.closed'
           AND o->>'status' IS DISTINCT FROM 'lost'
        THEN
            RETURN NEXT ('ignore', NULL, NULL, NULL, NULL, NULL,
                         'dispute closed as '
                         || coalesce(o->>'status', 'absent'))::payment_fact;
            RETURN;
        END IF;

        RETURN NEXT ('chargeback', json_text(o->'id') || ':withdrawn',
                     json_text(o->'payment_intent'), NULL,
                     json_minor(o->'amount'), upper(json_text(o->'currency')),
                     'dispute ' || coalesce(o->>'reason', ''))::payment_fact;

    WHEN 'charge.dispute.funds_reinstated' THEN
        RETURN NEXT ('chargeback_reversal', json_text(o->'id') || ':reinstated',
                     json_text(o->'payment_intent'), NULL,
                     json_minor(o->'amount'), upper(json_text(o->'currency')),
                     'dispute funds reinstated')::payment_fact;

    ELSE
        RETURN NEXT ('ignore', NULL, NULL, NULL, NULL, NULL,
                     'event type not mapped')::payment_fact;
    END CASE;
END
$$;


ALTER FUNCTION mt5credit.stripe_facts(p_type text, p_body jsonb) OWNER TO mt5credit_owner;

--
-- Name: stripe_leg_fact(jsonb, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.stripe_leg_fact(r jsonb, p_payment jsonb) RETURNS mt5credit.payment_fact
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT ('withdrawal_refund', json_text(r->'id'),
            coalesce(json_text(r->'payment_intent'), json_text(p_payment)),
            coalesce(json_text(r #> '{metadata,mt5credit_refund}'),
                     json_text(r #> '{metadata,mt5credit_withdrawal}')),
            json_minor(r->'amount'), upper(json_text(r->'currency')),
            coalesce(json_text(r->'status'), 'unknown') || ' '
            || coalesce(json_text(r #> '{metadata,mt5credit_deployment}'),
                        '-'))::mt5credit.payment_fact
$$;


ALTER FUNCTION mt5credit.stripe_leg_fact(r jsonb, p_payment jsonb) OWNER TO mt5credit_owner;

--
-- Name: sweep_expired_leases(text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.sweep_expired_leases(p_worker text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_n  integer;
BEGIN
    PERFORM set_actor(p_worker, '{"step": "sweep", "reason": "lease expired"}');

    UPDATE mt5_credit SET status = 'unknown'
    WHERE status = 'claimed' AND lease_expires_at < clock_timestamp();

    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END
$$;


ALTER FUNCTION mt5credit.sweep_expired_leases(p_worker text) OWNER TO mt5credit_owner;

--
-- Name: timeline_check(text, integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.timeline_check(p_worker text, p_lease_seconds integer, OUT system_identifier text, OUT timeline integer, OUT known_timeline integer, OUT rewind_id bigint, OUT credits integer) RETURNS record
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    credits := 0;

    SELECT t.system_identifier, t.timeline INTO system_identifier, timeline
    FROM database_timeline_now() t;

    IF EXISTS (SELECT 1 FROM database_timeline d
               WHERE d.system_identifier = timeline_check.system_identifier
                 AND d.timeline = timeline_check.timeline)
    THEN
        known_timeline := timeline;
        RETURN;
    END IF;

    LOCK TABLE database_timeline IN SHARE ROW EXCLUSIVE MODE;

    -- the newest recorded, of any system identifier: another cluster is
    -- as unrecorded as another timeline
    SELECT d.timeline INTO known_timeline
    FROM database_timeline d
    ORDER BY d.recorded_at DESC, d.timeline DESC LIMIT 1;

    IF EXISTS (SELECT 1 FROM database_timeline d
               WHERE d.system_identifier = timeline_check.system_identifier
                 AND d.timeline = timeline_check.timeline)
    THEN
        RETURN;
    END IF;

    IF known_timeline IS NOT NULL THEN
        SELECT b.rewind_id, b.credits INTO rewind_id, credits
        FROM rewind_begin(p_worker, p_lease_seconds,
                 jsonb_build_object(
                     'system_identifier', system_identifier,
                     'timeline', timeline,
                     'known_timeline', known_timeline,
                     'do', 'the database is on a timeline it had not '
                           'recorded: a failover or a restore.  Pending '
                           'credits are looked up in MT5 before any call, '
                           'and the events since an hour before lost_from '
                           'are read again from the providers that list '
                           'them.  After a restore, or a failover to an '
                           'asynchronous standby, follow "After a restore" '
                           'in docs/operations.md; if the promoted standby '
                           'was synchronous nothing was lost: resolve as '
                           'false_positive'),
                 'database_timeline_changed', 'high') b;
    END IF;

    INSERT INTO database_timeline (system_identifier, timeline, recorded_by,
                                   rewind_id)
    VALUES (system_identifier, timeline, p_worker, rewind_id);
END
$$;


ALTER FUNCTION mt5credit.timeline_check(p_worker text, p_lease_seconds integer, OUT system_identifier text, OUT timeline integer, OUT known_timeline integer, OUT rewind_id bigint, OUT credits integer) OWNER TO mt5credit_owner;

--
-- Name: FUNCTION timeline_check(p_worker text, p_lease_seconds integer, OUT system_identifier text, OUT timeline integer, OUT known_timeline integer, OUT rewind_id bigint, OUT credits integer); Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON FUNCTION mt5credit.timeline_check(p_worker text, p_lease_seconds integer, OUT system_identifier text, OUT timeline integer, OUT known_timeline integer, OUT rewind_id bigint, OUT credits integer) IS 'Records the timeline the database runs on; an unrecorded one (a failover, a restore) starts a rewind''s handling (073)';


--
-- Name: totp_code(bytea, bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.totp_code(p_secret bytea, p_step bigint) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    h  bytea := totp_hmac_sha1(p_secret, int8send(p_step));
    o  integer := get_byte(h, 19) & 15;
BEGIN
    -- (PostgreSQL gives <<, | and & one precedence: every one bracketed)
    RETURN lpad(((((get_byte(h, o) & 127)::bigint << 24)
                  | (get_byte(h, o + 1) << 16)
                  | (get_byte(h, o + 2) << 8)
                  | get_byte(h, o + 3)) % 1000000)::text, 6, '0');
END
$$;


ALTER FUNCTION mt5credit.totp_code(p_secret bytea, p_step bigint) OWNER TO mt5credit_owner;

--
-- Name: totp_hmac_sha1(bytea, bytea); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.totp_hmac_sha1(p_key bytea, p_msg bytea) RETURNS bytea
    LANGUAGE sql IMMUTABLE STRICT
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$SELECT mt5credit_crypto.hmac(p_msg, p_key, 'sha1')$$;


ALTER FUNCTION mt5credit.totp_hmac_sha1(p_key bytea, p_msg bytea) OWNER TO mt5credit_owner;

--
-- Name: totp_new_secret(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.totp_new_secret() RETURNS bytea
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$SELECT mt5credit_crypto.gen_random_bytes(20)$$;


ALTER FUNCTION mt5credit.totp_new_secret() OWNER TO mt5credit_owner;

--
-- Name: totp_uri(text, bytea); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.totp_uri(p_person text, p_secret bytea) RETURNS text
    LANGUAGE sql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT 'otpauth://totp/'
           || uri_component('mt5-credit:' || p_person || '@'
                            || current_database())
           || '?secret=' || base32(p_secret)
           || '&issuer=mt5-credit&algorithm=SHA1&digits=6&period=30'
$$;


ALTER FUNCTION mt5credit.totp_uri(p_person text, p_secret bytea) OWNER TO mt5credit_owner;

--
-- Name: uri_component(text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.uri_component(p text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT
    AS $_$
DECLARE
    b  bytea := convert_to(p, 'UTF8');
    c  integer;
    s  text := '';
BEGIN
    FOR i IN 0 .. length(b) - 1 LOOP
        c := get_byte(b, i);
        IF chr(c) ~ '^[A-Za-z0-9._~-]$' AND c < 128 THEN
            s := s || chr(c);
        ELSE
            s := s || '%' || upper(lpad(to_hex(c), 2, '0'));
        END IF;
    END LOOP;
    RETURN s;
END
$_$;


ALTER FUNCTION mt5credit.uri_component(p text) OWNER TO mt5credit_owner;

--
-- Name: webhook_event_conflict_guard(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.webhook_event_conflict_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'DELETE'
       OR (NEW.id, NEW.event_id, NEW.body_sha256, NEW.signature_scheme,
           NEW.signed_at, NEW.received_at)
          IS DISTINCT FROM
          (OLD.id, OLD.event_id, OLD.body_sha256, OLD.signature_scheme,
           OLD.signed_at, OLD.received_at)
       OR OLD.body_redacted_at IS NOT NULL
       OR NEW.raw_body <> ''::bytea OR NEW.body_redacted_at IS NULL
    THEN
        RAISE EXCEPTION 'a conflicting webhook body is evidence: it is never '
                        'changed, only redacted once'
            USING ERRCODE = 'MC013';
    END IF;

    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.webhook_event_conflict_guard() OWNER TO mt5credit_owner;

--
-- Name: webhook_event_guard(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.webhook_event_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF (NEW.provider, NEW.provider_event_id, NEW.event_type,
        NEW.body_sha256, NEW.signature_scheme, NEW.signed_at, NEW.received_at,
        NEW.request_id)
       IS DISTINCT FROM
       (OLD.provider, OLD.provider_event_id, OLD.event_type,
        OLD.body_sha256, OLD.signature_scheme, OLD.signed_at, OLD.received_at,
        OLD.request_id)
       OR (NEW.raw_body IS DISTINCT FROM OLD.raw_body
           AND NOT (OLD.body_redacted_at IS NULL
                    AND NEW.raw_body = ''::bytea
                    AND NEW.body_redacted_at IS NOT NULL))
       OR (NEW.body_redacted_at IS DISTINCT FROM OLD.body_redacted_at
           AND OLD.body_redacted_at IS NOT NULL)
    THEN
        RAISE EXCEPTION 'webhook event % is evidence: its content is '
                        'immutable (its body may only be redacted, once)',
                        OLD.id
            USING ERRCODE = 'MC013';
    END IF;

    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.webhook_event_guard() OWNER TO mt5credit_owner;

--
-- Name: webhook_malformed_guard(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.webhook_malformed_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF (NEW.provider, NEW.body_sha256, NEW.signature_scheme, NEW.reason,
        NEW.first_received_at, NEW.first_request_id)
       IS DISTINCT FROM
       (OLD.provider, OLD.body_sha256, OLD.signature_scheme, OLD.reason,
        OLD.first_received_at, OLD.first_request_id)
       OR NEW.deliveries < OLD.deliveries
       OR (NEW.raw_body IS DISTINCT FROM OLD.raw_body
           AND NOT (OLD.body_redacted_at IS NULL
                    AND NEW.raw_body = ''::bytea
                    AND NEW.body_redacted_at IS NOT NULL))
       OR (NEW.body_redacted_at IS DISTINCT FROM OLD.body_redacted_at
           AND OLD.body_redacted_at IS NOT NULL)
    THEN
        RAISE EXCEPTION 'a malformed delivery is kept as it came (its body '
                        'may only be redacted, once)'
            USING ERRCODE = 'MC014';
    END IF;
    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.webhook_malformed_guard() OWNER TO mt5credit_owner;

--
-- Name: withdrawal; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.withdrawal (
    id bigint NOT NULL,
    reference text GENERATED ALWAYS AS (('wd_'::text ||
CASE
    WHEN (id < 1000000) THEN lpad((id)::text, 6, '0'::text)
    ELSE (id)::text
END)) STORED NOT NULL,
    client_id text NOT NULL,
    idempotency_key text NOT NULL,
    provider text NOT NULL,
    mt5_server text NOT NULL,
    mt5_login bigint NOT NULL,
    amount_minor bigint NOT NULL,
    currency text NOT NULL,
    destination text NOT NULL,
    status text DEFAULT 'requested'::text NOT NULL,
    request_digest text GENERATED ALWAYS AS (md5(((((((((((((client_id || '|'::text) || provider) || '|'::text) || mt5_server) || '|'::text) || (mt5_login)::text) || '|'::text) || (amount_minor)::text) || '|'::text) || currency) || '|'::text) || destination))) STORED NOT NULL,
    prepared_by text,
    prepared_at timestamp with time zone,
    prepared_digest text,
    approved_by text,
    approved_at timestamp with time zone,
    approved_digest text,
    decided_by text,
    note text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    plan_no integer,
    plan_digest text,
    held_for jsonb,
    trading_after bigint,
    trading jsonb,
    CONSTRAINT withdrawal_amount_minor_check CHECK ((amount_minor > 0)),
    CONSTRAINT withdrawal_approved_as_asked CHECK (((approved_digest IS NULL) OR ((approved_digest = prepared_digest) AND (approved_digest =
CASE
    WHEN (plan_digest IS NULL) THEN request_digest
    ELSE md5(((request_digest || '|'::text) || plan_digest))
END)))),
    CONSTRAINT withdrawal_check CHECK (((prepared_by IS NOT NULL) = ((prepared_at IS NOT NULL) AND (prepared_digest IS NOT NULL)))),
    CONSTRAINT withdrawal_check1 CHECK (((status <> ALL (ARRAY['prepared'::text, 'approved'::text])) OR (prepared_by IS NOT NULL))),
    CONSTRAINT withdrawal_check2 CHECK (((status = 'approved'::text) = ((approved_by IS NOT NULL) AND (approved_at IS NOT NULL) AND (approved_digest IS NOT NULL)))),
    CONSTRAINT withdrawal_destination_check CHECK ((destination ~ '^[A-Za-z0-9_.:-]{1,255}$'::text)),
    CONSTRAINT withdrawal_four_eyes CHECK (((approved_by IS NULL) OR (approved_by <> prepared_by))),
    CONSTRAINT withdrawal_held_for_shape CHECK (((held_for IS NULL) OR ((jsonb_typeof(held_for) = 'array'::text) AND (jsonb_array_length(held_for) > 0)))),
    CONSTRAINT withdrawal_held_has_reason CHECK (((status <> 'held'::text) OR (held_for IS NOT NULL))),
    CONSTRAINT withdrawal_idempotency_key_check CHECK ((idempotency_key ~ '^[A-Za-z0-9_.:-]{8,128}$'::text)),
    CONSTRAINT withdrawal_note_check CHECK ((length(note) <= 4000)),
    CONSTRAINT withdrawal_plan_digest_check CHECK ((plan_digest ~ '^[0-9a-f]{32}$'::text)),
    CONSTRAINT withdrawal_plan_no_check CHECK ((plan_no > 0)),
    CONSTRAINT withdrawal_plan_prepared CHECK ((((plan_digest IS NULL) = (plan_no IS NULL)) AND ((plan_digest IS NULL) OR (prepared_digest IS NOT NULL)))),
    CONSTRAINT withdrawal_provider_check CHECK ((provider ~ '^[a-z][a-z0-9_-]{0,31}$'::text)),
    CONSTRAINT withdrawal_status_check CHECK ((status = ANY (ARRAY['requested'::text, 'prepared'::text, 'approved'::text, 'rejected'::text, 'cancelled'::text, 'held'::text]))),
    CONSTRAINT withdrawal_trading_looked CHECK (((status <> ALL (ARRAY['prepared'::text, 'approved'::text])) OR (trading_after IS NULL) OR (trading IS NOT NULL))),
    CONSTRAINT withdrawal_trading_shape CHECK (((trading IS NULL) OR ((trading_after IS NOT NULL) AND (jsonb_typeof(trading) = 'object'::text))))
);


ALTER TABLE mt5credit.withdrawal OWNER TO mt5credit_owner;

--
-- Name: TABLE withdrawal; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.withdrawal IS 'A client''s request to take money out of an MT5 account, and its maker-checker approval; the approved digest is what may be paid.';


--
-- Name: COLUMN withdrawal.held_for; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.withdrawal.held_for IS 'Every risk rule that held this withdrawal, each with its figures and the hold''s number (080); NULL: never held.  It only grows.';


--
-- Name: COLUMN withdrawal.trading_after; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.withdrawal.trading_after IS 'The login''s last credited deposit when the withdrawal was asked, under a withdrawal_trading rule: the trading since its deal is read from MT5 before the withdrawal can be prepared (080).';


--
-- Name: COLUMN withdrawal.trading; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.withdrawal.trading IS 'What the worker read from MT5: the volume and count of the login''s trades after trading_after''s deal, and the window (080).';


--
-- Name: withdrawal_amend(text, text, bigint, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.withdrawal_amend(p_client_id text, p_reference text, p_amount_minor bigint, p_destination text) RETURNS mt5credit.withdrawal
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    w  withdrawal;
BEGIN
    UPDATE withdrawal
    SET amount_minor = p_amount_minor, destination = p_destination
    WHERE client_id = p_client_id AND reference = p_reference
      AND status IN ('requested', 'prepared')
    RETURNING * INTO w;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no open withdrawal % of client %', p_reference,
                        p_client_id USING ERRCODE = 'MC072';
    END IF;
    RETURN withdrawal_client_view(w);
END
$$;


ALTER FUNCTION mt5credit.withdrawal_amend(p_client_id text, p_reference text, p_amount_minor bigint, p_destination text) OWNER TO mt5credit_owner;

--
-- Name: withdrawal_amount_trips(mt5credit.withdrawal, integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.withdrawal_amount_trips(w mt5credit.withdrawal, p_hold integer) RETURNS jsonb
    LANGUAGE sql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT coalesce(jsonb_agg(risk_trip(r, w.amount_minor,
                                        jsonb_build_object('hold', p_hold))
                              ORDER BY r.id), '[]')
    FROM risk_rule r
    WHERE r.rule = 'withdrawal_amount'
      AND r.currency = w.currency
      AND (r.provider IS NULL OR r.provider = w.provider)
      AND w.amount_minor > r.limit_minor
$$;


ALTER FUNCTION mt5credit.withdrawal_amount_trips(w mt5credit.withdrawal, p_hold integer) OWNER TO mt5credit_owner;

--
-- Name: withdrawal_approve(text, text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.withdrawal_approve(p_reference text, p_digest text, p_note text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    w       withdrawal;
    v_rows  integer;
    v_now   text;
BEGIN
    SELECT * INTO w FROM withdrawal WHERE reference = p_reference
    FOR UPDATE;
    IF NOT FOUND OR w.status <> 'prepared' THEN
        RAISE EXCEPTION 'withdrawal % is not prepared for approval',
                        p_reference USING ERRCODE = 'MC073';
    END IF;
    IF w.prepared_by = mt5credit.person() THEN
        RAISE EXCEPTION 'maker-checker: % prepared withdrawal % and cannot '
                        'approve it; another person must', mt5credit.person(),
                        p_reference USING ERRCODE = 'MC074';
    END IF;
    IF w.plan_digest IS NULL THEN
        RAISE EXCEPTION 'withdrawal % was prepared before withdrawals had '
                        'a plan: prepare it again, then approve',
                        p_reference USING ERRCODE = 'MC075';
    END IF;
    IF p_digest IS DISTINCT FROM w.prepared_digest
       OR w.prepared_digest IS DISTINCT FROM
          md5(w.request_digest || '|' || w.plan_digest)
    THEN
        RAISE EXCEPTION 'withdrawal % is not the request that was '
                        'prepared and shown: nothing approved', p_reference
            USING ERRCODE = 'MC075';
    END IF;

    PERFORM 1 FROM client_account
    WHERE mt5_server = w.mt5_server AND mt5_login = w.mt5_login
    FOR UPDATE;

    v_now := withdrawal_plan_digest(w.id);

    IF v_now IS DISTINCT FROM w.plan_digest THEN
        RAISE EXCEPTION 'withdrawal %: its plan changed since it was '
                        'prepared (a refund, a chargeback or another '
                        'withdrawal came in): nothing approved; prepare it '
                        'again', p_reference
            USING ERRCODE = 'MC076';
    END IF;

    -- 065: through the console, the person's code for this approval
    PERFORM step_up_require('withdrawal_approve', p_reference, p_digest);

    UPDATE withdrawal
    SET status = 'approved', approved_by = mt5credit.person(),
        approved_at = clock_timestamp(), approved_digest = p_digest,
        note = coalesce(p_note, note)
    WHERE id = w.id AND status = 'prepared'
      AND prepared_digest = p_digest;
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    IF v_rows <> 1 THEN
        RAISE EXCEPTION 'withdrawal % changed under the approval',
                        p_reference USING ERRCODE = 'MC075';
    END IF;
END
$$;


ALTER FUNCTION mt5credit.withdrawal_approve(p_reference text, p_digest text, p_note text) OWNER TO mt5credit_owner;

--
-- Name: withdrawal_case_decide(mt5credit.money_proposal, text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.withdrawal_case_decide(p mt5credit.money_proposal, p_decision text, p_note text) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    c       "case" := desk_case(p.case_id);
    w       withdrawal;
    v_rows  integer;
BEGIN
    PERFORM decision_allowed('proposal ' || p.id, p.status, p.proposed_by,
                             p_decision);
    SELECT * INTO STRICT w FROM withdrawal WHERE id = p.withdrawal_id
    FOR UPDATE;

    IF p_decision = 'approve' THEN
        PERFORM step_up_require('approve', p.id::text);
        PERFORM withdrawal_hold_current(c, w);
        -- released: asked again, for the usual maker and checker;
        -- returned: rejected, nothing leaves the MT5 account
        UPDATE withdrawal
        SET status = CASE p.action WHEN 'release_hold' THEN 'requested'
                                   ELSE 'rejected' END,
            decided_by = CASE p.action WHEN 'return_hold'
                              THEN mt5credit.person() END,
            note = CASE p.action WHEN 'return_hold' THEN p.note
                                 ELSE note END
        WHERE id = w.id AND status = 'held';
        GET DIAGNOSTICS v_rows = ROW_COUNT;
        IF v_rows <> 1 THEN
            RAISE EXCEPTION 'withdrawal % is % now, no longer held: '
                            'nothing decided', w.reference, w.status
                USING ERRCODE = 'MC048';
        END IF;
    END IF;

    UPDATE money_proposal
    SET status = CASE p_decision WHEN 'approve' THEN 'approved'
                                 WHEN 'reject' THEN 'rejected'
                                 ELSE 'withdrawn' END,
        decided_by = mt5credit.person(), decided_at = clock_timestamp(),
        decision_note = p_note
    WHERE id = p.id AND status = 'proposed';

    UPDATE "case"
    SET status = CASE WHEN p_decision = 'approve' THEN 'pending_resolution'
                      WHEN c.assigned_to IS NOT NULL THEN 'assigned'
                      ELSE 'open' END
    WHERE id = c.id;

    PERFORM desk_record(c.id, p_decision,
        jsonb_build_object('status', c.status, 'proposal', p.id,
                           'withdrawal_status', w.status),
        jsonb_build_object('proposal_status', p_decision,
                           'withdrawal', w.id),
        p_note, NULL);
    RETURN w.id;
END
$$;


ALTER FUNCTION mt5credit.withdrawal_case_decide(p mt5credit.money_proposal, p_decision text, p_note text) OWNER TO mt5credit_owner;

--
-- Name: withdrawal_case_propose(mt5credit."case", text, text, jsonb); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.withdrawal_case_propose(c mt5credit."case", p_action text, p_note text, p_evidence jsonb) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    w     withdrawal;
    v_id  bigint;
BEGIN
    SELECT * INTO STRICT w FROM withdrawal
    WHERE id = (c.details->'withdrawal'->>'id')::bigint;
    IF p_action NOT IN ('release_hold', 'return_hold') THEN
        RAISE EXCEPTION 'case %: a withdrawal''s hold is released or '
                        'returned, nothing else (not %)', c.id, p_action
            USING ERRCODE = 'MC048';
    END IF;
    IF w.status <> 'held' THEN
        RAISE EXCEPTION 'withdrawal % is %: only a held withdrawal is '
                        'released or returned', w.reference, w.status
            USING ERRCODE = 'MC048';
    END IF;
    PERFORM withdrawal_hold_current(c, w);

    PERFORM step_up_require('propose', c.id::text, p_action, NULL, NULL);

    INSERT INTO money_proposal (case_id, action, withdrawal_id, note,
                                evidence, proposed_by)
    VALUES (c.id, p_action, w.id, p_note, coalesce(p_evidence, '[]'),
            mt5credit.person())
    RETURNING id INTO v_id;

    UPDATE "case" SET status = 'pending_resolution' WHERE id = c.id;
    PERFORM desk_record(c.id, 'propose',
        jsonb_build_object('status', c.status),
        jsonb_build_object('status', 'pending_resolution', 'proposal', v_id,
                           'action', p_action, 'withdrawal', w.id),
        p_note, p_evidence);
    RETURN v_id;
END
$$;


ALTER FUNCTION mt5credit.withdrawal_case_propose(c mt5credit."case", p_action text, p_note text, p_evidence jsonb) OWNER TO mt5credit_owner;

--
-- Name: withdrawal_client_view(mt5credit.withdrawal); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.withdrawal_client_view(w mt5credit.withdrawal) RETURNS mt5credit.withdrawal
    LANGUAGE plpgsql IMMUTABLE
    AS $$
BEGIN
    IF w.status = 'held' THEN
        w.status := 'requested';
    END IF;
    w.held_for := NULL;
    w.trading_after := NULL;
    w.trading := NULL;
    RETURN w;
END
$$;


ALTER FUNCTION mt5credit.withdrawal_client_view(w mt5credit.withdrawal) OWNER TO mt5credit_owner;

--
-- Name: withdrawal_debit_after_rewind(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.withdrawal_debit_after_rewind() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_detail  text := current_setting('mt5credit.detail', true);
BEGIN
    IF EXISTS (SELECT 1 FROM database_rewind r
               WHERE NEW.withdrawal_id <= r.withdrawals_upto)
    THEN
        -- the approver's transaction: its detail is put back afterwards
        PERFORM set_config('mt5credit.detail',
            (coalesce(nullif(v_detail, ''), '{}')::jsonb
             || jsonb_build_object('step', 'withdrawal debit after a '
                                   'rewind: looked up first'))::text, true);
        UPDATE mt5_credit
        SET status = 'unknown', attempts = attempts + 1,
            lease_expires_at = clock_timestamp(), next_check_at = NULL
        WHERE id = NEW.id AND status = 'pending';
        PERFORM set_config('mt5credit.detail', coalesce(v_detail, ''), true);
    END IF;
    RETURN NULL;
END
$$;


ALTER FUNCTION mt5credit.withdrawal_debit_after_rewind() OWNER TO mt5credit_owner;

--
-- Name: withdrawal_enqueue_debit(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.withdrawal_enqueue_debit() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    PERFORM set_config('mt5credit.actor', NEW.approved_by, true);
    PERFORM set_config('mt5credit.detail',
        jsonb_build_object('withdrawal', NEW.reference,
                           'prepared_by', NEW.prepared_by,
                           'approved_by', NEW.approved_by,
                           'digest', NEW.approved_digest)::text, true);

    INSERT INTO mt5_credit (kind, direction, withdrawal_id, provider,
                            provider_payment_id, mt5_server, mt5_login,
                            amount_minor, currency, paid_amount_minor,
                            paid_currency)
    VALUES ('withdrawal', 'debit', NEW.id, NEW.provider,
            'payout:' || NEW.reference, NEW.mt5_server, NEW.mt5_login,
            NEW.amount_minor, NEW.currency, NEW.amount_minor, NEW.currency);
    RETURN NULL;
END
$$;


ALTER FUNCTION mt5credit.withdrawal_enqueue_debit() OWNER TO mt5credit_owner;

--
-- Name: withdrawal_guard(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.withdrawal_guard() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    -- (a generated column is not computed yet in a BEFORE trigger: the
    -- fields it is made of are compared)
    IF (NEW.provider, NEW.mt5_server, NEW.mt5_login, NEW.amount_minor,
        NEW.currency, NEW.destination)
       IS DISTINCT FROM
       (OLD.provider, OLD.mt5_server, OLD.mt5_login, OLD.amount_minor,
        OLD.currency, OLD.destination)
       OR (NEW.client_id, NEW.idempotency_key, NEW.created_at)
          IS DISTINCT FROM (OLD.client_id, OLD.idempotency_key, OLD.created_at)
    THEN
        IF OLD.status NOT IN ('requested', 'prepared')
           OR (NEW.client_id, NEW.idempotency_key, NEW.created_at)
              IS DISTINCT FROM (OLD.client_id, OLD.idempotency_key,
                                OLD.created_at)
        THEN
            RAISE EXCEPTION 'withdrawal % is %: what it asks cannot change',
                            OLD.reference, OLD.status
                USING ERRCODE = 'MC070';
        END IF;
        NEW.status := 'requested';
        NEW.prepared_by := NULL;
        NEW.prepared_at := NULL;
        NEW.prepared_digest := NULL;
    END IF;

    IF NEW.status IS DISTINCT FROM OLD.status
       AND NOT EXISTS (SELECT 1 FROM withdrawal_transition
                       WHERE from_status = OLD.status
                         AND to_status = NEW.status)
    THEN
        RAISE EXCEPTION 'withdrawal %: % -> % is not a legal change',
                        OLD.reference, OLD.status, NEW.status
            USING ERRCODE = 'MC071';
    END IF;

    NEW.updated_at := now();
    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.withdrawal_guard() OWNER TO mt5credit_owner;

--
-- Name: withdrawal_held_for_grows(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.withdrawal_held_for_grows() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    IF OLD.held_for IS NOT NULL
       AND (NEW.held_for IS NULL
            OR jsonb_array_length(NEW.held_for)
               < jsonb_array_length(OLD.held_for)
            OR (SELECT jsonb_agg(e ORDER BY n)
                FROM jsonb_array_elements(NEW.held_for)
                     WITH ORDINALITY AS x (e, n)
                WHERE n <= jsonb_array_length(OLD.held_for))
               <> OLD.held_for)
    THEN
        RAISE EXCEPTION 'withdrawal %: why it was held never changes',
                        OLD.reference USING ERRCODE = 'MC011';
    END IF;
    IF OLD.trading IS NOT NULL
       AND NEW.trading IS DISTINCT FROM OLD.trading
       OR NEW.trading_after IS DISTINCT FROM OLD.trading_after
    THEN
        RAISE EXCEPTION 'withdrawal %: the trading it was judged on never '
                        'changes', OLD.reference USING ERRCODE = 'MC011';
    END IF;
    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.withdrawal_held_for_grows() OWNER TO mt5credit_owner;

--
-- Name: withdrawal_hold_current(mt5credit."case", mt5credit.withdrawal); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.withdrawal_hold_current(c mt5credit."case", w mt5credit.withdrawal) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    IF w.status = 'held'
       AND (c.details->'withdrawal'->>'hold')::integer
           IS DISTINCT FROM jsonb_array_length(w.held_for)
    THEN
        RAISE EXCEPTION 'case %: withdrawal % was held again since (hold '
                        '%, this case is for hold %): decide it on the '
                        'newest hold''s case', c.id, w.reference,
                        jsonb_array_length(w.held_for),
                        c.details->'withdrawal'->>'hold'
            USING ERRCODE = 'MC048';
    END IF;
END
$$;


ALTER FUNCTION mt5credit.withdrawal_hold_current(c mt5credit."case", w mt5credit.withdrawal) OWNER TO mt5credit_owner;

--
-- Name: withdrawal_on_hold(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.withdrawal_on_hold() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_hold   integer := jsonb_array_length(NEW.held_for);
BEGIN
    PERFORM open_case('withdrawal_hold', 'medium',
        'withdrawal_hold:' || NEW.id || ':' || v_hold,
        jsonb_build_object(
            'held_for', (SELECT jsonb_agg(e) FROM jsonb_array_elements(
                                                       NEW.held_for) e
                         WHERE (e->>'hold')::integer = v_hold),
            'withdrawal', jsonb_build_object(
                'id', NEW.id, 'reference', NEW.reference,
                'client', NEW.client_id, 'provider', NEW.provider,
                'mt5_server', NEW.mt5_server, 'mt5_login', NEW.mt5_login,
                'destination', NEW.destination, 'hold', v_hold),
            'trading', NEW.trading),
        NULL, NULL, NULL, NEW.amount_minor, NEW.currency);
    RETURN NULL;
END
$$;


ALTER FUNCTION mt5credit.withdrawal_on_hold() OWNER TO mt5credit_owner;

--
-- Name: withdrawal_payable(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.withdrawal_payable() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM payout_currency
                   WHERE provider = NEW.provider
                     AND currency = NEW.currency)
    THEN
        RAISE EXCEPTION 'withdrawal %: % cannot pay out %; refused before '
                        'anything is debited', coalesce(NEW.reference, 'new'),
                        NEW.provider, NEW.currency
            USING ERRCODE = 'MC083',
                  HINT = 'the currencies a provider pays out are listed in '
                         'mt5credit.payout_currency';
    END IF;
    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.withdrawal_payable() OWNER TO mt5credit_owner;

--
-- Name: withdrawal_plan(bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.withdrawal_plan(p_withdrawal bigint) RETURNS TABLE(leg integer, kind text, provider text, credit_id bigint, payment_key text, amount_minor bigint, currency text, account_amount_minor bigint, fx_rate numeric)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    w       withdrawal;
    d       record;
    v_left  bigint;
    v_n     integer := 0;
    v_paid  bigint;
    v_acc   bigint;
BEGIN
    SELECT * INTO STRICT w FROM withdrawal WHERE id = p_withdrawal;
    v_left := w.amount_minor;

    FOR d IN
        SELECT c.id, c.provider, c.provider_payment_id, c.paid_currency,
               c.amount_minor AS credited, c.fx_rate,
               c.paid_amount_minor
               - coalesce((SELECT sum(CASE r.direction
                                      WHEN 'debit' THEN r.paid_amount_minor
                                      ELSE -r.paid_amount_minor END)
                           FROM mt5_credit r
                           WHERE r.original_credit_id = c.id
                             AND r.kind IN ('refund', 'chargeback')
                             AND r.status <> 'failed'), 0)
               - coalesce((SELECT sum(l.amount_minor)
                           FROM withdrawal_leg l
                           JOIN withdrawal o ON o.id = l.withdrawal_id
                                            AND o.plan_no = l.plan_no
                           WHERE l.credit_id = c.id
                             AND o.status = 'approved'
                             AND o.id <> w.id), 0) AS refundable
        FROM mt5_credit c
        JOIN deposit dep ON dep.id = c.deposit_id
        JOIN refund_window rw ON rw.provider = c.provider
        WHERE c.kind = 'deposit' AND c.status = 'done'
          AND dep.client_id = w.client_id
          AND c.mt5_server = w.mt5_server AND c.mt5_login = w.mt5_login
          AND c.currency = w.currency
          AND c.created_at >= now() - make_interval(days => rw.days)
        ORDER BY c.created_at DESC, c.id DESC
    LOOP
        EXIT WHEN v_left = 0;
        CONTINUE WHEN d.refundable <= 0;

        IF d.fx_rate IS NULL THEN
            v_paid := least(d.refundable, v_left);
            v_acc := v_paid;
        ELSE
            -- the largest payment amount whose worth at the stored rate
            -- fits in what is left
            v_paid := least(d.refundable,
                            floor(v_left / (d.fx_rate
                                  * power(10::numeric,
                                          (SELECT t.minor_digits
                                                  - f.minor_digits
                                           FROM currency f, currency t
                                           WHERE f.code = d.paid_currency
                                             AND t.code = w.currency))))
                            ::bigint + 1);
            WHILE v_paid > 0
                  AND convert_minor(v_paid, d.paid_currency, w.currency,
                                    d.fx_rate) > v_left
            LOOP
                v_paid := v_paid - 1;
            END LOOP;
            CONTINUE WHEN v_paid <= 0;
            v_acc := convert_minor(v_paid, d.paid_currency, w.currency,
                                   d.fx_rate);
            CONTINUE WHEN v_acc <= 0;
        END IF;

        v_n := v_n + 1;
        v_left := v_left - v_acc;
        leg := v_n; kind := 'refund'; provider := d.provider;
        credit_id := d.id; payment_key := d.provider_payment_id;
        amount_minor := v_paid; currency := d.paid_currency;
        account_amount_minor := v_acc; fx_rate := d.fx_rate;
        RETURN NEXT;
    END LOOP;

    IF v_left > 0 THEN
        leg := v_n + 1; kind := 'payout'; provider := w.provider;
        credit_id := NULL; payment_key := NULL;
        amount_minor := v_left; currency := w.currency;
        account_amount_minor := v_left; fx_rate := NULL;
        RETURN NEXT;
    END IF;
END
$$;


ALTER FUNCTION mt5credit.withdrawal_plan(p_withdrawal bigint) OWNER TO mt5credit_owner;

--
-- Name: withdrawal_plan_digest(bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.withdrawal_plan_digest(p_withdrawal bigint) RETURNS text
    LANGUAGE sql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT md5(string_agg(concat_ws(':', p.leg, p.kind, p.provider,
                                    p.credit_id, p.payment_key,
                                    p.amount_minor, p.currency,
                                    p.account_amount_minor, p.fx_rate),
                          '|' ORDER BY p.leg))
    FROM withdrawal_plan(p_withdrawal) p
$$;


ALTER FUNCTION mt5credit.withdrawal_plan_digest(p_withdrawal bigint) OWNER TO mt5credit_owner;

--
-- Name: withdrawal_plan_guard(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.withdrawal_plan_guard() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF OLD.status NOT IN ('requested', 'prepared')
       AND (NEW.plan_no, NEW.plan_digest)
           IS DISTINCT FROM (OLD.plan_no, OLD.plan_digest)
    THEN
        RAISE EXCEPTION 'withdrawal % is %: its plan cannot change',
                        OLD.reference, OLD.status
            USING ERRCODE = 'MC070';
    END IF;

    IF NEW.prepared_digest IS NULL THEN
        NEW.plan_no := NULL;
        NEW.plan_digest := NULL;
    END IF;
    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.withdrawal_plan_guard() OWNER TO mt5credit_owner;

--
-- Name: withdrawal_plan_show(text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.withdrawal_plan_show(p_reference text) RETURNS TABLE(leg integer, kind text, provider text, payment_key text, amount_minor bigint, currency text, account_amount_minor bigint, fx_rate numeric, plan_no integer, prepared_digest text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT l.leg, l.kind, l.provider, l.payment_key, l.amount_minor,
           l.currency, l.account_amount_minor, l.fx_rate, l.plan_no,
           w.prepared_digest
    FROM withdrawal w
    JOIN withdrawal_leg l ON l.withdrawal_id = w.id
                         AND l.plan_no = w.plan_no
    WHERE w.reference = p_reference
    ORDER BY l.leg
$$;


ALTER FUNCTION mt5credit.withdrawal_plan_show(p_reference text) OWNER TO mt5credit_owner;

--
-- Name: withdrawal_prepare(text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.withdrawal_prepare(p_reference text, p_note text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    w       withdrawal;
    v_plan  integer;
    v_pd    text;
BEGIN
    SELECT * INTO w FROM withdrawal WHERE reference = p_reference
    FOR UPDATE;
    -- (one prepared before plans existed is prepared again, with its plan)
    IF NOT FOUND OR NOT (w.status = 'requested'
                         OR (w.status = 'prepared' AND w.plan_no IS NULL))
    THEN
        RAISE EXCEPTION 'withdrawal % is not waiting to be prepared',
                        p_reference USING ERRCODE = 'MC073';
    END IF;

    -- one plan at a time per account: two withdrawals of one login are
    -- planned (and approved) one after the other
    PERFORM 1 FROM client_account
    WHERE mt5_server = w.mt5_server AND mt5_login = w.mt5_login
    FOR UPDATE;

    -- 065: through the console, the person's code for this preparation
    PERFORM step_up_require('withdrawal_prepare', p_reference);

    SELECT coalesce(max(plan_no), 0) + 1 INTO v_plan
    FROM withdrawal_leg WHERE withdrawal_id = w.id;

    INSERT INTO withdrawal_leg (withdrawal_id, plan_no, leg, kind, provider,
                                credit_id, payment_key, amount_minor,
                                currency, account_amount_minor, fx_rate)
    SELECT w.id, v_plan, p.leg, p.kind, p.provider, p.credit_id,
           p.payment_key, p.amount_minor, p.currency,
           p.account_amount_minor, p.fx_rate
    FROM withdrawal_plan(w.id) p;

    -- the same plan as the legs just stored: one transaction, one now()
    v_pd := withdrawal_plan_digest(w.id);

    UPDATE withdrawal
    SET status = 'prepared', prepared_by = mt5credit.person(),
        prepared_at = clock_timestamp(),
        prepared_digest = md5(request_digest || '|' || v_pd),
        plan_no = v_plan, plan_digest = v_pd,
        note = coalesce(p_note, note)
    WHERE id = w.id AND status = w.status
    RETURNING * INTO w;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'withdrawal % changed under the preparation',
                        p_reference USING ERRCODE = 'MC073';
    END IF;

    RETURN w.prepared_digest;
END
$$;


ALTER FUNCTION mt5credit.withdrawal_prepare(p_reference text, p_note text) OWNER TO mt5credit_owner;

--
-- Name: withdrawal_progress(text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.withdrawal_progress(p_client_id text, p_reference text) RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT CASE
           WHEN w.status IN ('requested', 'prepared', 'held') THEN 'in_review'
           WHEN w.status IN ('rejected', 'cancelled') THEN w.status
           WHEN c.status = 'failed' THEN 'declined'
           WHEN c.status IS DISTINCT FROM 'done' OR l.n = 0 THEN 'processing'
           WHEN l.failed > 0 THEN 'under_review'
           WHEN l.arrived = l.n THEN 'paid'
           WHEN l.sent = l.n THEN 'sent'
           ELSE 'processing'
           END
    FROM withdrawal w
    LEFT JOIN mt5_credit c ON c.withdrawal_id = w.id AND c.kind = 'withdrawal'
    CROSS JOIN LATERAL (
        SELECT count(*) AS n,
               count(*) FILTER (WHERE s IN ('failed', 'rejected')) AS failed,
               count(*) FILTER (WHERE s IN ('succeeded', 'paid')) AS arrived,
               count(*) FILTER (WHERE s IN ('accepted', 'succeeded',
                                            'paid')) AS sent
        FROM (SELECT p.status AS s FROM payout p WHERE p.withdrawal_id = w.id
              UNION ALL
              SELECT r.status FROM withdrawal_refund r
              WHERE r.withdrawal_id = w.id) legs
    ) l
    WHERE w.client_id = p_client_id AND w.reference = p_reference
$$;


ALTER FUNCTION mt5credit.withdrawal_progress(p_client_id text, p_reference text) OWNER TO mt5credit_owner;

--
-- Name: withdrawal_progress_legs(text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.withdrawal_progress_legs(p_client_id text, p_reference text) RETURNS TABLE(leg integer, kind text, progress text, amount_minor bigint, currency text, destination text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT l.leg, l.kind,
           CASE coalesce(r.status, p.status)
           WHEN 'succeeded' THEN 'refunded'
           WHEN 'paid' THEN 'paid'
           WHEN 'accepted' THEN CASE l.kind WHEN 'refund' THEN 'refund_sent'
                                            ELSE 'sent' END
           WHEN 'failed' THEN 'under_review'
           WHEN 'rejected' THEN 'under_review'
           ELSE 'processing'
           END,
           l.amount_minor, l.currency,
           CASE WHEN l.kind = 'payout' THEN w.destination
                WHEN r.card_hint IS NOT NULL
                THEN 'card ' || split_part(r.card_hint, ' ', 1) || ' …'
                     || split_part(r.card_hint, ' ', 2)
                ELSE 'the payment ' || d.reference || ' of '
                     || to_char(c.created_at, 'YYYY-MM-DD') END
    FROM withdrawal w
    JOIN withdrawal_leg l ON l.withdrawal_id = w.id AND l.plan_no = w.plan_no
    LEFT JOIN withdrawal_refund r ON r.withdrawal_id = w.id AND r.leg = l.leg
    LEFT JOIN payout p ON p.withdrawal_id = w.id AND p.leg = l.leg
    LEFT JOIN mt5_credit c ON c.id = l.credit_id
    LEFT JOIN deposit d ON d.id = c.deposit_id
    WHERE w.client_id = p_client_id AND w.reference = p_reference
      AND w.status = 'approved'
    ORDER BY l.leg
$$;


ALTER FUNCTION mt5credit.withdrawal_progress_legs(p_client_id text, p_reference text) OWNER TO mt5credit_owner;

--
-- Name: withdrawal_queue(text, integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.withdrawal_queue(p_status text, p_limit integer) RETURNS TABLE(reference text, status text, client_id text, mt5_server text, mt5_login bigint, amount_minor bigint, currency text, legs bigint, refunds_minor bigint, prepared_by text, created_at timestamp with time zone)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT w.reference, w.status, w.client_id, w.mt5_server, w.mt5_login,
           w.amount_minor, w.currency,
           (SELECT count(*) FROM withdrawal_leg l
            WHERE l.withdrawal_id = w.id AND l.plan_no = w.plan_no),
           (SELECT coalesce(sum(l.account_amount_minor), 0)
            FROM withdrawal_leg l
            WHERE l.withdrawal_id = w.id AND l.plan_no = w.plan_no
              AND l.kind = 'refund'),
           w.prepared_by, w.created_at
    FROM withdrawal w
    WHERE (p_status IS NULL AND w.status IN ('requested', 'prepared'))
       OR w.status = p_status
    ORDER BY w.created_at, w.id
    LIMIT least(greatest(coalesce(p_limit, 100), 1), 10000)
$$;


ALTER FUNCTION mt5credit.withdrawal_queue(p_status text, p_limit integer) OWNER TO mt5credit_owner;

--
-- Name: withdrawal_refund_guard_and_log(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.withdrawal_refund_guard_and_log() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO withdrawal_refund_history (refund_id, from_status,
                                               to_status, attempts, actor,
                                               detail)
        VALUES (NEW.id, NULL, NEW.status, NEW.attempts, credit_actor(),
                credit_detail());
        RETURN NEW;
    END IF;

    IF (NEW.withdrawal_id, NEW.plan_no, NEW.leg, NEW.debit_credit_id,
        NEW.provider, NEW.credit_id, NEW.payment_key, NEW.amount_minor,
        NEW.currency, NEW.account_amount_minor, NEW.created_at)
       IS DISTINCT FROM
       (OLD.withdrawal_id, OLD.plan_no, OLD.leg, OLD.debit_credit_id,
        OLD.provider, OLD.credit_id, OLD.payment_key, OLD.amount_minor,
        OLD.currency, OLD.account_amount_minor, OLD.created_at)
       OR (OLD.provider_refund_id IS NOT NULL
           AND NEW.provider_refund_id IS DISTINCT FROM OLD.provider_refund_id)
       OR (OLD.card_hint IS NOT NULL
           AND NEW.card_hint IS DISTINCT FROM OLD.card_hint)
       OR NEW.attempts < OLD.attempts
    THEN
        RAISE EXCEPTION 'refund %: what it refunds and whom the provider '
                        'says it is never change', OLD.reference
            USING ERRCODE = 'MC090';
    END IF;

    IF NEW.status IS DISTINCT FROM OLD.status THEN
        IF NOT EXISTS (SELECT 1 FROM withdrawal_refund_transition
                       WHERE from_status = OLD.status
                         AND to_status = NEW.status)
        THEN
            RAISE EXCEPTION 'refund %: % -> % is not a legal transition',
                            OLD.reference, OLD.status, NEW.status
                USING ERRCODE = 'MC091';
        END IF;

        INSERT INTO withdrawal_refund_history (refund_id, from_status,
                                               to_status, attempts, actor,
                                               detail)
        VALUES (NEW.id, OLD.status, NEW.status, NEW.attempts,
                credit_actor(), credit_detail());
    END IF;

    NEW.updated_at := now();
    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.withdrawal_refund_guard_and_log() OWNER TO mt5credit_owner;

--
-- Name: withdrawal_reject(text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.withdrawal_reject(p_reference text, p_note text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
BEGIN
    UPDATE withdrawal
    SET status = 'rejected', decided_by = mt5credit.person(), note = p_note
    WHERE reference = p_reference AND status IN ('requested', 'prepared');
    IF NOT FOUND THEN
        RAISE EXCEPTION 'withdrawal % is not open', p_reference
            USING ERRCODE = 'MC073';
    END IF;
END
$$;


ALTER FUNCTION mt5credit.withdrawal_reject(p_reference text, p_note text) OWNER TO mt5credit_owner;

--
-- Name: withdrawal_request(text, text, text, text, bigint, bigint, text, text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.withdrawal_request(p_client_id text, p_idempotency_key text, p_provider text, p_mt5_server text, p_mt5_login bigint, p_amount_minor bigint, p_currency text, p_destination text) RETURNS mt5credit.withdrawal
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    w  withdrawal;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM client_account
                   WHERE mt5_server = p_mt5_server
                     AND mt5_login = p_mt5_login
                     AND client_id = p_client_id AND status = 'active')
    THEN
        RAISE EXCEPTION 'client % does not own an active MT5 account %/%',
                        p_client_id, p_mt5_server, p_mt5_login
            USING ERRCODE = 'MC001';
    END IF;

    INSERT INTO withdrawal (client_id, idempotency_key, provider,
                            mt5_server, mt5_login, amount_minor, currency,
                            destination)
    VALUES (p_client_id, p_idempotency_key, p_provider, p_mt5_server,
            p_mt5_login, p_amount_minor, p_currency, p_destination)
    ON CONFLICT (client_id, idempotency_key) DO NOTHING
    RETURNING * INTO w;

    IF w.id IS NOT NULL THEN
        RETURN withdrawal_client_view(w);
    END IF;

    SELECT * INTO STRICT w FROM withdrawal
    WHERE client_id = p_client_id AND idempotency_key = p_idempotency_key;

    IF (w.provider, w.mt5_server, w.mt5_login, w.amount_minor, w.currency,
        w.destination)
       IS DISTINCT FROM
       (p_provider, p_mt5_server, p_mt5_login, p_amount_minor, p_currency,
        p_destination)
    THEN
        RAISE EXCEPTION 'idempotency key % already used for withdrawal % '
                        'with different parameters', p_idempotency_key,
                        w.reference USING ERRCODE = 'MC002';
    END IF;

    RETURN withdrawal_client_view(w);
END
$$;


ALTER FUNCTION mt5credit.withdrawal_request(p_client_id text, p_idempotency_key text, p_provider text, p_mt5_server text, p_mt5_login bigint, p_amount_minor bigint, p_currency text, p_destination text) OWNER TO mt5credit_owner;

--
-- Name: withdrawal_risk_check(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.withdrawal_risk_check() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_trips  jsonb;
    v_hold   integer := coalesce(jsonb_array_length(NEW.held_for), 0) + 1;
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF EXISTS (SELECT 1 FROM risk_rule r
                   WHERE r.rule = 'withdrawal_trading'
                     AND (r.currency IS NULL OR r.currency = NEW.currency)
                     AND (r.provider IS NULL OR r.provider = NEW.provider))
        THEN
            SELECT c.id INTO NEW.trading_after
            FROM mt5_credit c
            WHERE c.mt5_server = NEW.mt5_server
              AND c.mt5_login = NEW.mt5_login
              AND c.kind = 'deposit' AND c.status = 'done'
            ORDER BY c.mt5_deal_ticket DESC
            LIMIT 1;
        END IF;
    ELSIF NEW.status = 'prepared' AND OLD.status <> 'prepared'
          AND NEW.trading_after IS NOT NULL AND NEW.trading IS NULL
    THEN
        RAISE EXCEPTION 'withdrawal % waits for the worker to read the '
                        'login''s trading from MT5 (rule '
                        'withdrawal_trading): it cannot be prepared yet',
                        NEW.reference USING ERRCODE = 'MC073';
    ELSIF NEW.status = 'prepared' AND OLD.status <> 'prepared'
          AND NEW.trading_after IS NOT NULL
          AND EXISTS (SELECT 1 FROM mt5_credit c, mt5_credit a
                      WHERE a.id = NEW.trading_after
                        AND c.mt5_server = NEW.mt5_server
                        AND c.mt5_login = NEW.mt5_login
                        AND c.kind = 'deposit' AND c.status = 'done'
                        AND c.mt5_deal_ticket > a.mt5_deal_ticket)
    THEN
        -- asked while a deposit was on its way: the trading read was
        -- since the one before, not since the money it would take out
        RAISE EXCEPTION 'withdrawal %: a deposit was credited to its login '
                        'after it was asked, so its trading was not read '
                        'since that deposit (rule withdrawal_trading): '
                        'reject it and let the client ask again',
                        NEW.reference USING ERRCODE = 'MC073';
    ELSIF (NEW.amount_minor, NEW.currency, NEW.provider)
          IS NOT DISTINCT FROM (OLD.amount_minor, OLD.currency, OLD.provider)
          OR NEW.status <> 'requested'
    THEN
        RETURN NEW;
    END IF;

    v_trips := withdrawal_amount_trips(NEW, v_hold);
    IF jsonb_array_length(v_trips) > 0 THEN
        NEW.held_for := coalesce(NEW.held_for, '[]') || v_trips;
        NEW.status := 'held';
    END IF;
    RETURN NEW;
END
$$;


ALTER FUNCTION mt5credit.withdrawal_risk_check() OWNER TO mt5credit_owner;

--
-- Name: withdrawal_show(text); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.withdrawal_show(p_reference text) RETURNS jsonb
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT jsonb_build_object(
        'reference', w.reference, 'status', w.status,
        'client_id', w.client_id, 'provider', w.provider,
        'mt5_server', w.mt5_server, 'mt5_login', w.mt5_login,
        'amount_minor', w.amount_minor, 'currency', w.currency,
        'destination', w.destination, 'created_at', w.created_at,
        'prepared_by', w.prepared_by, 'prepared_at', w.prepared_at,
        'prepared_digest', w.prepared_digest,
        'approved_by', w.approved_by, 'approved_at', w.approved_at,
        'note', w.note, 'plan_no', w.plan_no,
        'plan', coalesce((SELECT jsonb_agg(jsonb_build_object(
                'leg', l.leg, 'kind', l.kind, 'provider', l.provider,
                'payment', l.payment_key, 'amount_minor', l.amount_minor,
                'currency', l.currency,
                'account_amount_minor', l.account_amount_minor,
                'fx_rate', l.fx_rate) ORDER BY l.leg)
            FROM withdrawal_leg l
            WHERE l.withdrawal_id = w.id AND l.plan_no = w.plan_no), '[]'),
        'debit', (SELECT jsonb_build_object('reference', c.reference,
                                            'status', c.status,
                                            'deal', c.mt5_deal_ticket)
                  FROM mt5_credit c
                  WHERE c.withdrawal_id = w.id AND c.kind = 'withdrawal'),
        -- each leg as sent: where it is, under which key, what the
        -- provider calls it
        'sent', coalesce((SELECT jsonb_agg(x.o ORDER BY x.leg)
            FROM (SELECT r.leg, jsonb_build_object('leg', r.leg,
                         'kind', 'refund', 'reference', r.reference,
                         'status', r.status, 'attempts', r.attempts,
                         'idempotency_key', r.idempotency_key,
                         'provider_id', r.provider_refund_id,
                         'card', r.card_hint,
                         'failure_code', r.failure_code) AS o
                  FROM withdrawal_refund r WHERE r.withdrawal_id = w.id
                  UNION ALL
                  SELECT coalesce(p.leg, 1), jsonb_build_object(
                         'leg', p.leg, 'kind', 'payout',
                         'reference', p.reference, 'status', p.status,
                         'attempts', p.attempts,
                         'idempotency_key', p.idempotency_key,
                         'provider_id', p.provider_payout_id,
                         'failure_code', p.failure_code)
                  FROM payout p WHERE p.withdrawal_id = w.id) x), '[]'))
    FROM withdrawal w
    WHERE w.reference = p_reference
$$;


ALTER FUNCTION mt5credit.withdrawal_show(p_reference text) OWNER TO mt5credit_owner;

--
-- Name: withdrawal_trading_due(text[], integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.withdrawal_trading_due(p_servers text[], p_limit integer) RETURNS TABLE(id bigint, reference text, mt5_server text, mt5_login bigint, after_credit bigint, after_ticket bigint)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    WITH due AS MATERIALIZED (
        SELECT w.id, w.reference, w.mt5_server, w.mt5_login,
               c.id AS after_credit, c.mt5_deal_ticket AS after_ticket,
               t.last_at
        FROM withdrawal w
        JOIN mt5_credit c ON c.id = w.trading_after
        LEFT JOIN withdrawal_trading_try t ON t.withdrawal_id = w.id
        WHERE w.trading_after IS NOT NULL AND w.trading IS NULL
          AND w.status IN ('requested', 'held')
          AND w.mt5_server = ANY (p_servers)
        ORDER BY t.last_at NULLS FIRST, w.id
        LIMIT least(greatest(coalesce(p_limit, 20), 1), 100)),
    tried AS (
        INSERT INTO withdrawal_trading_try AS t (withdrawal_id, tries,
                                                 last_at)
        SELECT d.id, 1, clock_timestamp() FROM due d
        ON CONFLICT (withdrawal_id)
            DO UPDATE SET tries = t.tries + 1, last_at = excluded.last_at)
    SELECT d.id, d.reference, d.mt5_server, d.mt5_login, d.after_credit,
           d.after_ticket
    FROM due d
    ORDER BY d.last_at NULLS FIRST, d.id
$$;


ALTER FUNCTION mt5credit.withdrawal_trading_due(p_servers text[], p_limit integer) OWNER TO mt5credit_owner;

--
-- Name: withdrawal_trading_record(bigint, bigint, bigint, integer, bigint, bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.withdrawal_trading_record(p_withdrawal bigint, p_after_ticket bigint, p_volume bigint, p_deals integer, p_from bigint, p_to bigint) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    w        withdrawal;
    r        risk_rule;
    v_seen   jsonb;
    v_hold   integer;
BEGIN
    SELECT * INTO w FROM withdrawal WHERE id = p_withdrawal FOR UPDATE;
    IF NOT FOUND OR w.trading_after IS NULL THEN
        RAISE EXCEPTION 'withdrawal % has no trading to read', p_withdrawal
            USING ERRCODE = 'MC073';
    END IF;
    IF w.trading IS NOT NULL OR w.status NOT IN ('requested', 'held') THEN
        RETURN 'closed';
    END IF;
    IF p_after_ticket IS DISTINCT FROM
       (SELECT c.mt5_deal_ticket FROM mt5_credit c
        WHERE c.id = w.trading_after)
    THEN
        RAISE EXCEPTION 'withdrawal %: trading read after deal %, not '
                        'after its deposit''s deal', w.reference,
                        p_after_ticket USING ERRCODE = 'MC073';
    END IF;
    IF p_volume < 0 OR p_deals < 0 OR p_to < p_from THEN
        RAISE EXCEPTION 'withdrawal %: an impossible reading', w.reference
            USING ERRCODE = 'MC073';
    END IF;

    v_seen := jsonb_build_object('after_credit', w.trading_after,
                                 'after_deal', p_after_ticket,
                                 'volume', p_volume, 'deals', p_deals,
                                 'from', p_from, 'to', p_to,
                                 'read_at', clock_timestamp());

    -- the strictest rule in force for it, if any is left
    SELECT * INTO r FROM risk_rule k
    WHERE k.rule = 'withdrawal_trading'
      AND (k.currency IS NULL OR k.currency = w.currency)
      AND (k.provider IS NULL OR k.provider = w.provider)
    ORDER BY k.limit_volume DESC, k.id
    LIMIT 1;

    IF r.id IS NULL OR p_volume >= r.limit_volume THEN
        UPDATE withdrawal SET trading = v_seen WHERE id = w.id;
        RETURN 'passed';
    END IF;

    v_hold := coalesce(jsonb_array_length(w.held_for), 0) + 1;
    UPDATE withdrawal
    SET trading = v_seen, status = 'held',
        held_for = coalesce(held_for, '[]')
                   || jsonb_build_array(risk_trip(r, p_volume,
                          v_seen || jsonb_build_object('hold', v_hold)))
    WHERE id = w.id;
    RETURN 'held';
END
$$;


ALTER FUNCTION mt5credit.withdrawal_trading_record(p_withdrawal bigint, p_after_ticket bigint, p_volume bigint, p_deals integer, p_from bigint, p_to bigint) OWNER TO mt5credit_owner;

--
-- Name: witness_pick(text[], integer); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.witness_pick(p_servers text[], p_limit integer) RETURNS TABLE(id bigint, attempts integer, mt5_server text, mt5_login bigint, comment text, look_from bigint, db_now bigint)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT c.id, c.attempts, c.mt5_server, c.mt5_login,
           mt5_comment(c.deployment_tag, c.reference),
           extract(epoch FROM least(c.created_at,
                                    coalesce(c.look_from, c.created_at)))
               ::bigint,
           extract(epoch FROM now())::bigint
    FROM mt5_credit c
    WHERE c.status = 'pending'
      AND c.mt5_server = ANY (p_servers)
      AND NOT paused('server', c.mt5_server)
    ORDER BY c.id
    LIMIT greatest(p_limit, 0)
$$;


ALTER FUNCTION mt5credit.witness_pick(p_servers text[], p_limit integer) OWNER TO mt5credit_owner;

--
-- Name: FUNCTION witness_pick(p_servers text[], p_limit integer); Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON FUNCTION mt5credit.witness_pick(p_servers text[], p_limit integer) IS 'The pending credits next in line, for the worker to ask MT5 about before it claims (068)';


--
-- Name: witness_still_pending(bigint[], integer[]); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.witness_still_pending(p_ids bigint[], p_attempts integer[]) RETURNS SETOF bigint
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT c.id
    FROM unnest(p_ids, p_attempts) f (id, attempts)
    JOIN mt5_credit c ON c.id = f.id
    WHERE c.status = 'pending' AND c.attempts = f.attempts
    ORDER BY c.id
$$;


ALTER FUNCTION mt5credit.witness_still_pending(p_ids bigint[], p_attempts integer[]) OWNER TO mt5credit_owner;

--
-- Name: FUNCTION witness_still_pending(p_ids bigint[], p_attempts integer[]); Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON FUNCTION mt5credit.witness_still_pending(p_ids bigint[], p_attempts integer[]) IS 'Which of these credits are still pending at these attempts: one with a deal in MT5 was claimed in a timeline the database lost (068)';


--
-- Name: work_item_of(bigint); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.work_item_of(p_id bigint) RETURNS mt5credit.work_item
    LANGUAGE plpgsql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    r  work_item;
BEGIN
    SELECT c.id, c.attempts, c.kind, c.direction,
           mt5_comment(c.deployment_tag, c.reference), c.mt5_server,
           c.mt5_login, c.amount_minor, c.currency, cur.minor_digits,
           o.client_id,
           EXISTS (SELECT 1 FROM client_account a
                   WHERE a.mt5_server = c.mt5_server
                     AND a.mt5_login = c.mt5_login
                     AND a.client_id = o.client_id
                     AND a.currency = c.currency
                     AND a.status = 'active'),
           c.created_at, c.claimed_at, c.lease_expires_at,
           (extract(epoch FROM c.lease_expires_at - clock_timestamp())
            * 1000)::bigint,
           CASE WHEN c.status = 'unknown'
                THEN (settle_request(c.id)).deal_ticket END,
           -- 066
           c.look_from
    INTO r
    FROM mt5_credit c
    CROSS JOIN LATERAL (
        SELECT d.client_id FROM deposit d WHERE d.id = c.deposit_id
        UNION ALL
        SELECT w.client_id FROM withdrawal w WHERE w.id = c.withdrawal_id
    ) o
    JOIN currency cur ON cur.code = c.currency
    WHERE c.id = p_id;

    -- as the SQL function did: no such credit is NULL, not a row of NULLs
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;

    RETURN r;
END
$$;


ALTER FUNCTION mt5credit.work_item_of(p_id bigint) OWNER TO mt5credit_owner;

--
-- Name: work_status(); Type: FUNCTION; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE FUNCTION mt5credit.work_status() RETURNS TABLE(metric text, kind text, status text, value double precision)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT 'credits', c.kind, c.status, count(*)::double precision
    FROM mt5_credit c GROUP BY c.kind, c.status
    UNION ALL
    SELECT 'oldest_age_seconds', NULL, c.status,
           coalesce(extract(epoch FROM now() - min(c.created_at)), 0)
    FROM mt5_credit c
    WHERE c.status IN ('pending', 'claimed', 'unknown', 'held')
    GROUP BY c.status
    UNION ALL
    -- 079: credits held, by the rule that held them (one credit under
    -- each rule it tripped) and where they are now
    SELECT 'holds', r->>'rule', c.status, count(*)::double precision
    FROM mt5_credit c, jsonb_array_elements(c.held_for) r
    WHERE c.held_for IS NOT NULL
    GROUP BY r->>'rule', c.status
    UNION ALL
    -- 080: withdrawals held, the same way (a withdrawal under each rule
    -- of each of its holds), and the oldest still held
    SELECT 'withdrawal_holds', r->>'rule', w.status,
           count(*)::double precision
    FROM withdrawal w, jsonb_array_elements(w.held_for) r
    WHERE w.held_for IS NOT NULL
    GROUP BY r->>'rule', w.status
    UNION ALL
    SELECT 'withdrawal_oldest_age_seconds', NULL, w.status,
           coalesce(extract(epoch FROM now() - min(w.updated_at)), 0)
    FROM withdrawal w
    WHERE w.status IN ('requested', 'prepared', 'held')
    GROUP BY w.status
    UNION ALL
    SELECT 'open_cases', k.kind, k.severity, count(*)::double precision
    FROM "case" k WHERE k.status <> 'resolved'
    GROUP BY k.kind, k.severity
    UNION ALL
    SELECT 'payouts', NULL, p.status, count(*)::double precision
    FROM payout p GROUP BY p.status
    UNION ALL
    SELECT 'payout_oldest_age_seconds', NULL, p.status,
           coalesce(extract(epoch FROM now() - min(p.created_at)), 0)
    FROM payout p
    WHERE p.status IN ('pending', 'sending', 'unknown', 'accepted')
    GROUP BY p.status
    UNION ALL
    SELECT 'refunds', NULL, r.status, count(*)::double precision
    FROM withdrawal_refund r GROUP BY r.status
    UNION ALL
    SELECT 'refund_oldest_age_seconds', NULL, r.status,
           coalesce(extract(epoch FROM now() - min(r.created_at)), 0)
    FROM withdrawal_refund r
    WHERE r.status IN ('pending', 'sending', 'unknown', 'accepted')
    GROUP BY r.status
    UNION ALL
    SELECT 'done_total', l.kind, NULL, sum(l.n)::double precision
    FROM credit_latency l GROUP BY l.kind
    UNION ALL
    -- cumulative: each bound counts every credit at or below it; every
    -- bound is printed, also before the first credit
    SELECT 'latency_bucket', NULL, b.le,
           coalesce(sum(l.n) FILTER (WHERE b.le = '+Inf'
                                     OR (l.le <> '+Inf'
                                         AND l.le::numeric
                                             <= b.le::numeric)), 0)
    FROM (VALUES ('0.05'), ('0.1'), ('0.25'), ('0.5'), ('1'), ('2.5'),
                 ('5'), ('10'), ('30'), ('60'), ('300'), ('+Inf')) AS b (le)
    LEFT JOIN credit_latency l ON true
    GROUP BY b.le
    UNION ALL
    SELECT 'latency_sum', NULL, NULL,
           coalesce(sum(l.sum_ms), 0)::double precision / 1000
    FROM credit_latency l
    UNION ALL
    SELECT 'latency_count', NULL, NULL, coalesce(sum(l.n), 0)::double precision
    FROM credit_latency l
$$;


ALTER FUNCTION mt5credit.work_status() OWNER TO mt5credit_owner;

--
-- Name: backfill_request; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.backfill_request (
    id bigint NOT NULL,
    provider text NOT NULL,
    since timestamp with time zone NOT NULL,
    reason text NOT NULL,
    requested_by text DEFAULT mt5credit.person() NOT NULL,
    requested_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    taken_by text,
    taken_at timestamp with time zone,
    finished_at timestamp with time zone,
    outcome text,
    every_event boolean DEFAULT false NOT NULL,
    CONSTRAINT backfill_request_check CHECK (((since <= requested_at) AND (since >= (requested_at - '30 days'::interval)))),
    CONSTRAINT backfill_request_check1 CHECK (((taken_by IS NULL) = (taken_at IS NULL))),
    CONSTRAINT backfill_request_check2 CHECK (((finished_at IS NULL) = (outcome IS NULL))),
    CONSTRAINT backfill_request_check3 CHECK (((finished_at IS NULL) OR (taken_at IS NOT NULL))),
    CONSTRAINT backfill_request_outcome_check CHECK ((length(outcome) <= 2000)),
    CONSTRAINT backfill_request_provider_check CHECK ((provider ~ '^[a-z][a-z0-9_-]{0,31}$'::text)),
    CONSTRAINT backfill_request_reason_check CHECK (((length(btrim(reason)) >= 1) AND (length(btrim(reason)) <= 2000)))
);


ALTER TABLE mt5credit.backfill_request OWNER TO mt5credit_owner;

--
-- Name: TABLE backfill_request; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.backfill_request IS 'A person''s request to backfill a provider''s undelivered events from further back; taken and finished by the backfill program (059).';


--
-- Name: COLUMN backfill_request.every_event; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.backfill_request.every_event IS 'every event of the window, delivered or not: a rewind lost events the provider had delivered (069); false: the undelivered ones (047)';


--
-- Name: backfill_request_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.backfill_request ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.backfill_request_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: case_action; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.case_action (
    id bigint NOT NULL,
    case_id bigint NOT NULL,
    action text NOT NULL,
    actor text NOT NULL,
    at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    before jsonb DEFAULT '{}'::jsonb NOT NULL,
    after jsonb DEFAULT '{}'::jsonb NOT NULL,
    note text,
    evidence jsonb DEFAULT '[]'::jsonb NOT NULL,
    CONSTRAINT case_action_action_check CHECK ((action = ANY (ARRAY['assign'::text, 'note'::text, 'propose'::text, 'approve'::text, 'reject'::text, 'withdraw'::text, 'resolve'::text, 'verify'::text]))),
    CONSTRAINT case_action_actor_check CHECK (((length(actor) >= 1) AND (length(actor) <= 200))),
    CONSTRAINT case_action_after_check CHECK ((jsonb_typeof(after) = 'object'::text)),
    CONSTRAINT case_action_before_check CHECK ((jsonb_typeof(before) = 'object'::text)),
    CONSTRAINT case_action_evidence_check CHECK ((jsonb_typeof(evidence) = 'array'::text)),
    CONSTRAINT case_action_note_check CHECK ((length(note) <= 4000))
);


ALTER TABLE mt5credit.case_action OWNER TO mt5credit_owner;

--
-- Name: TABLE case_action; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.case_action IS 'Append-only: who did what to a case, when, the values before and after, and the evidence they gave.';


--
-- Name: case_action_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.case_action ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.case_action_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: case_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit."case" ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.case_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: case_transition; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.case_transition (
    from_status text NOT NULL,
    to_status text NOT NULL
);


ALTER TABLE mt5credit.case_transition OWNER TO mt5credit_owner;

--
-- Name: client_account; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.client_account (
    id bigint NOT NULL,
    client_id text NOT NULL,
    mt5_server text NOT NULL,
    mt5_login bigint NOT NULL,
    currency text NOT NULL,
    status text DEFAULT 'active'::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    closed_at timestamp with time zone,
    CONSTRAINT client_account_check CHECK (((status = 'closed'::text) = (closed_at IS NOT NULL))),
    CONSTRAINT client_account_client_id_check CHECK (((length(client_id) >= 1) AND (length(client_id) <= 128))),
    CONSTRAINT client_account_mt5_login_check CHECK ((mt5_login > 0)),
    CONSTRAINT client_account_mt5_server_check CHECK ((mt5_server ~ '^[a-z0-9][a-z0-9_.-]{0,62}$'::text)),
    CONSTRAINT client_account_status_check CHECK ((status = ANY (ARRAY['active'::text, 'closed'::text])))
);


ALTER TABLE mt5credit.client_account OWNER TO mt5credit_owner;

--
-- Name: TABLE client_account; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.client_account IS 'MT5 logins each client owns, as our server records it. The worker checks ownership here again right before each MT5 call.';


--
-- Name: client_account_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.client_account ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.client_account_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: client_name; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.client_name (
    client_id text NOT NULL,
    name text NOT NULL,
    set_at timestamp with time zone DEFAULT now() NOT NULL,
    id bigint NOT NULL,
    CONSTRAINT client_name_client_id_check CHECK (((length(client_id) >= 1) AND (length(client_id) <= 128))),
    CONSTRAINT client_name_name_check CHECK ((((length(name) >= 1) AND (length(name) <= 200)) AND (cardinality(mt5credit.name_words(name)) > 0)))
);


ALTER TABLE mt5credit.client_name OWNER TO mt5credit_owner;

--
-- Name: TABLE client_name; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.client_name IS 'A client''s legal name as the broker''s KYC holds it, recorded by the portal (082); the payer_name rule compares a payment''s signed payer name with it.';


--
-- Name: COLUMN client_name.id; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.client_name.id IS 'The row''s chain in the money journal, client_name:<id> (091).';


--
-- Name: client_name_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.client_name ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.client_name_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: console_act_rate; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.console_act_rate (
    person text NOT NULL,
    minute timestamp with time zone NOT NULL,
    actions integer NOT NULL,
    CONSTRAINT console_act_rate_actions_check CHECK (((actions >= 1) AND (actions <= 60)))
);


ALTER TABLE mt5credit.console_act_rate OWNER TO mt5credit_owner;

--
-- Name: console_identity; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.console_identity (
    identity text NOT NULL,
    person oid NOT NULL,
    mapped_by text DEFAULT SESSION_USER NOT NULL,
    mapped_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT console_identity_shape CHECK (((identity ~ '^[^[:cntrl:]]{1,255}$'::text) AND (identity = btrim(identity))))
);


ALTER TABLE mt5credit.console_identity OWNER TO mt5credit_owner;

--
-- Name: TABLE console_identity; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.console_identity IS 'the names nginx may give for a person, each mapped to one person''s role (063); only console_person_of() reads it';


--
-- Name: console_identity_history; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.console_identity_history (
    id bigint NOT NULL,
    identity text NOT NULL,
    person text,
    action text NOT NULL,
    actor text DEFAULT SESSION_USER NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT console_identity_history_action_check CHECK ((action = ANY (ARRAY['map'::text, 'unmap'::text])))
);


ALTER TABLE mt5credit.console_identity_history OWNER TO mt5credit_owner;

--
-- Name: console_identity_history_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.console_identity_history ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.console_identity_history_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: credit_history; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.credit_history (
    id bigint NOT NULL,
    credit_id bigint NOT NULL,
    from_status text,
    to_status text NOT NULL,
    attempts integer NOT NULL,
    at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    actor text NOT NULL,
    detail jsonb DEFAULT '{}'::jsonb NOT NULL,
    CONSTRAINT credit_history_actor_check CHECK (((length(actor) >= 1) AND (length(actor) <= 200))),
    CONSTRAINT credit_history_check CHECK ((from_status IS DISTINCT FROM to_status)),
    CONSTRAINT credit_history_detail_check CHECK ((jsonb_typeof(detail) = 'object'::text))
);


ALTER TABLE mt5credit.credit_history OWNER TO mt5credit_owner;

--
-- Name: TABLE credit_history; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.credit_history IS 'Append-only: one row per status change of a credit, written by a trigger. Who acted comes from the setting mt5credit.actor, details from mt5credit.detail (both transaction-local, set by the writer).';


--
-- Name: credit_history_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.credit_history ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.credit_history_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: credit_latency; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.credit_latency (
    kind text NOT NULL,
    le text NOT NULL,
    shard smallint NOT NULL,
    n bigint DEFAULT 0 NOT NULL,
    sum_ms bigint DEFAULT 0 NOT NULL,
    CONSTRAINT credit_latency_kind_check CHECK ((kind <> ''::text)),
    CONSTRAINT credit_latency_le_check CHECK ((le = ANY (ARRAY['0.05'::text, '0.1'::text, '0.25'::text, '0.5'::text, '1'::text, '2.5'::text, '5'::text, '10'::text, '30'::text, '60'::text, '300'::text, '+Inf'::text]))),
    CONSTRAINT credit_latency_n_check CHECK ((n >= 0)),
    CONSTRAINT credit_latency_shard_check CHECK (((shard >= 0) AND (shard <= 7))),
    CONSTRAINT credit_latency_sum_ms_check CHECK ((sum_ms >= 0))
);


ALTER TABLE mt5credit.credit_latency OWNER TO mt5credit_owner;

--
-- Name: TABLE credit_latency; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.credit_latency IS 'credits done and their intent-to-deal time, counted once each when they became done (050); only grows';


--
-- Name: credit_transition; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.credit_transition (
    from_status text NOT NULL,
    to_status text NOT NULL,
    why text NOT NULL
);


ALTER TABLE mt5credit.credit_transition OWNER TO mt5credit_owner;

--
-- Name: currency; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.currency (
    code text NOT NULL,
    minor_digits smallint NOT NULL,
    name text NOT NULL,
    CONSTRAINT currency_code_check CHECK ((code ~ '^[A-Z][A-Z0-9]{2,9}$'::text)),
    CONSTRAINT currency_minor_digits_check CHECK (((minor_digits >= 0) AND (minor_digits <= 8)))
);


ALTER TABLE mt5credit.currency OWNER TO mt5credit_owner;

--
-- Name: TABLE currency; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.currency IS 'Currencies an amount may be in; minor_digits places the decimal point.';


--
-- Name: database_rewind; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.database_rewind (
    id bigint NOT NULL,
    at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    noticed_by text NOT NULL,
    withdrawals_upto bigint NOT NULL,
    detail jsonb DEFAULT '{}'::jsonb NOT NULL,
    lost_from timestamp with time zone,
    CONSTRAINT database_rewind_withdrawals_upto_check CHECK ((withdrawals_upto >= 0))
);


ALTER TABLE mt5credit.database_rewind OWNER TO mt5credit_owner;

--
-- Name: TABLE database_rewind; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.database_rewind IS 'Each time a worker found the database gone back in time (029, 037)';


--
-- Name: COLUMN database_rewind.lost_from; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.database_rewind.lost_from IS 'The last change the database held when the rewind was noticed: the lost timeline came after it (066)';


--
-- Name: database_rewind_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.database_rewind ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.database_rewind_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: database_timeline; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.database_timeline (
    system_identifier text NOT NULL,
    timeline integer NOT NULL,
    recorded_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    recorded_by text NOT NULL,
    rewind_id bigint,
    CONSTRAINT database_timeline_recorded_by_check CHECK (((length(recorded_by) >= 1) AND (length(recorded_by) <= 200))),
    CONSTRAINT database_timeline_system_identifier_check CHECK ((system_identifier ~ '^[0-9]{1,20}$'::text)),
    CONSTRAINT database_timeline_timeline_check CHECK ((timeline > 0))
);


ALTER TABLE mt5credit.database_timeline OWNER TO mt5credit_owner;

--
-- Name: TABLE database_timeline; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.database_timeline IS 'Each (system identifier, timeline) the database has run on, recorded by the first worker to see it: one it runs on and lacks is a failover or a restore (073); append-only';


--
-- Name: deployment; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.deployment (
    one boolean DEFAULT true NOT NULL,
    tag text NOT NULL,
    set_by text DEFAULT mt5credit.person() NOT NULL,
    set_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    CONSTRAINT deployment_one_check CHECK (one),
    CONSTRAINT deployment_tag_check CHECK ((tag ~ '^[a-z0-9]{1,8}$'::text))
);


ALTER TABLE mt5credit.deployment OWNER TO mt5credit_owner;

--
-- Name: TABLE deployment; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.deployment IS 'This database''s deployment tag, in every MT5 comment and payout key made after it was set; set once by the owner, never changed (036).';


--
-- Name: deposit_conflict; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.deposit_conflict (
    id bigint NOT NULL,
    deposit_id bigint NOT NULL,
    status text NOT NULL,
    reported text NOT NULL,
    source text NOT NULL,
    detail jsonb DEFAULT '{}'::jsonb NOT NULL,
    at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    case_id bigint NOT NULL,
    CONSTRAINT deposit_conflict_check CHECK ((status <> reported)),
    CONSTRAINT deposit_conflict_detail_check CHECK ((jsonb_typeof(detail) = 'object'::text)),
    CONSTRAINT deposit_conflict_reported_check CHECK ((reported = ANY (ARRAY['created'::text, 'pending'::text, 'succeeded'::text, 'failed'::text, 'closed'::text]))),
    CONSTRAINT deposit_conflict_source_check CHECK (((length(source) >= 1) AND (length(source) <= 200)))
);


ALTER TABLE mt5credit.deposit_conflict OWNER TO mt5credit_owner;

--
-- Name: deposit_conflict_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.deposit_conflict ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.deposit_conflict_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: deposit_history; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.deposit_history (
    id bigint NOT NULL,
    deposit_id bigint NOT NULL,
    from_status text NOT NULL,
    to_status text NOT NULL,
    at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    actor text NOT NULL,
    detail jsonb DEFAULT '{}'::jsonb NOT NULL,
    CONSTRAINT deposit_history_detail_check CHECK ((jsonb_typeof(detail) = 'object'::text))
);


ALTER TABLE mt5credit.deposit_history OWNER TO mt5credit_owner;

--
-- Name: deposit_history_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.deposit_history ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.deposit_history_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: deposit_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.deposit ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.deposit_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: deposit_transition; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.deposit_transition (
    from_status text NOT NULL,
    to_status text NOT NULL,
    why text NOT NULL
);


ALTER TABLE mt5credit.deposit_transition OWNER TO mt5credit_owner;

--
-- Name: journal; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.journal (
    id bigint NOT NULL,
    chain mt5credit.journal_chain NOT NULL,
    seq mt5credit.journal_seq NOT NULL,
    source text NOT NULL,
    source_id bigint NOT NULL,
    entry jsonb NOT NULL,
    prev_hash mt5credit.sha256_digest NOT NULL,
    hash mt5credit.sha256_digest NOT NULL,
    xid xid8 DEFAULT pg_current_xact_id() NOT NULL
);
ALTER TABLE ONLY mt5credit.journal ALTER COLUMN entry SET COMPRESSION lz4;


ALTER TABLE mt5credit.journal OWNER TO mt5credit_owner;

--
-- Name: TABLE journal; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.journal IS 'The money journal (081): every chained fact as an entry of its entity''s hash chain, written in the fact''s transaction.  Sealed and signed outside the database by mt5credit audit seal.';


--
-- Name: journal_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.journal ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.journal_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: money_proposal_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.money_proposal ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.money_proposal_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: mt5_credit; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.mt5_credit (
    id bigint NOT NULL,
    kind text NOT NULL,
    direction text NOT NULL,
    original_credit_id bigint,
    deposit_id bigint,
    provider text NOT NULL,
    provider_payment_id text NOT NULL,
    mt5_server text NOT NULL,
    mt5_login bigint NOT NULL,
    amount_minor bigint NOT NULL,
    currency text NOT NULL,
    paid_amount_minor bigint NOT NULL,
    paid_currency text NOT NULL,
    fx_rate numeric,
    fx_source text,
    fx_at timestamp with time zone,
    status text DEFAULT 'pending'::text NOT NULL,
    mt5_deal_ticket bigint,
    attempts integer DEFAULT 0 NOT NULL,
    claimed_at timestamp with time zone,
    claimed_by text,
    lease_expires_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    next_check_at timestamp with time zone,
    withdrawal_id bigint,
    withdrawal_amount_minor bigint GENERATED ALWAYS AS (
CASE
    WHEN (kind = 'withdrawal'::text) THEN amount_minor
    ELSE NULL::bigint
END) STORED,
    withdrawal_status text GENERATED ALWAYS AS (
CASE
    WHEN (kind = 'withdrawal'::text) THEN 'approved'::text
    ELSE NULL::text
END) STORED,
    deployment_tag text,
    reference_form smallint DEFAULT 2 NOT NULL,
    reference text GENERATED ALWAYS AS (
CASE
    WHEN (kind = 'withdrawal'::text) THEN ('wd:'::text || (withdrawal_id)::text)
    WHEN (kind = 'correction'::text) THEN ('cor:'::text || (id)::text)
    WHEN (reference_form = 1) THEN (
    CASE
        WHEN (kind = 'deposit'::text) THEN 'dep:'::text
        WHEN (kind = 'refund'::text) THEN 'rfd:'::text
        WHEN (direction = 'debit'::text) THEN 'cbk:'::text
        ELSE 'cbr:'::text
    END || (id)::text)
    ELSE (
    CASE
        WHEN (kind = 'deposit'::text) THEN 'dep:'::text
        WHEN (kind = 'refund'::text) THEN 'rfd:'::text
        WHEN (direction = 'debit'::text) THEN 'cbk:'::text
        ELSE 'cbr:'::text
    END || mt5credit.payment_reference_key(provider, provider_payment_id))
END) STORED NOT NULL,
    look_from timestamp with time zone,
    held_for jsonb,
    payer_name text,
    instrument text,
    provider_signal text,
    payer_name_erased_at timestamp with time zone,
    CONSTRAINT mt5_credit_amount_minor_check CHECK ((amount_minor > 0)),
    CONSTRAINT mt5_credit_attempts_check CHECK ((attempts >= 0)),
    CONSTRAINT mt5_credit_check1 CHECK (((kind <> 'deposit'::text) OR (direction = 'credit'::text))),
    CONSTRAINT mt5_credit_check2 CHECK (((kind <> 'refund'::text) OR (direction = 'debit'::text))),
    CONSTRAINT mt5_credit_check3 CHECK (((paid_currency = currency) = (fx_rate IS NULL))),
    CONSTRAINT mt5_credit_check4 CHECK (((fx_rate IS NULL) = (fx_source IS NULL))),
    CONSTRAINT mt5_credit_check5 CHECK (((fx_rate IS NULL) = (fx_at IS NULL))),
    CONSTRAINT mt5_credit_check6 CHECK (((paid_currency <> currency) OR (paid_amount_minor = amount_minor))),
    CONSTRAINT mt5_credit_check7 CHECK (((status = 'done'::text) = (mt5_deal_ticket IS NOT NULL))),
    CONSTRAINT mt5_credit_check8 CHECK (((status <> 'claimed'::text) OR ((claimed_at IS NOT NULL) AND (lease_expires_at IS NOT NULL) AND (claimed_by IS NOT NULL)))),
    CONSTRAINT mt5_credit_check9 CHECK (((status = ANY (ARRAY['pending'::text, 'held'::text])) OR (attempts > 0) OR ((status = 'failed'::text) AND (held_for IS NOT NULL)))),
    CONSTRAINT mt5_credit_direction_check CHECK ((direction = ANY (ARRAY['credit'::text, 'debit'::text]))),
    CONSTRAINT mt5_credit_fx_rate_check CHECK ((fx_rate > (0)::numeric)),
    CONSTRAINT mt5_credit_held_for_shape CHECK (((held_for IS NULL) OR ((kind = 'deposit'::text) AND (jsonb_typeof(held_for) = 'array'::text) AND (jsonb_array_length(held_for) > 0)))),
    CONSTRAINT mt5_credit_held_has_reason CHECK (((status <> 'held'::text) OR (held_for IS NOT NULL))),
    CONSTRAINT mt5_credit_instrument_check CHECK (((length(instrument) >= 1) AND (length(instrument) <= 128))),
    CONSTRAINT mt5_credit_kind_check CHECK ((kind = ANY (ARRAY['deposit'::text, 'refund'::text, 'chargeback'::text, 'correction'::text, 'withdrawal'::text]))),
    CONSTRAINT mt5_credit_mt5_deal_ticket_check CHECK ((mt5_deal_ticket > 0)),
    CONSTRAINT mt5_credit_mt5_login_check CHECK ((mt5_login > 0)),
    CONSTRAINT mt5_credit_one_parent CHECK (((deposit_id IS NULL) <> (withdrawal_id IS NULL))),
    CONSTRAINT mt5_credit_original_iff_reversal CHECK (((kind = ANY (ARRAY['deposit'::text, 'withdrawal'::text])) = (original_credit_id IS NULL))),
    CONSTRAINT mt5_credit_paid_amount_minor_check CHECK ((paid_amount_minor > 0)),
    CONSTRAINT mt5_credit_payer_name_check CHECK (((length(payer_name) >= 1) AND (length(payer_name) <= 200))),
    CONSTRAINT mt5_credit_payer_name_erased CHECK (((payer_name_erased_at IS NULL) OR (payer_name IS NULL))),
    CONSTRAINT mt5_credit_provider_check CHECK ((provider ~ '^[a-z][a-z0-9_-]{0,31}$'::text)),
    CONSTRAINT mt5_credit_provider_payment_id_check CHECK (((length(provider_payment_id) >= 1) AND (length(provider_payment_id) <= 255))),
    CONSTRAINT mt5_credit_provider_signal_check CHECK (((length(provider_signal) >= 1) AND (length(provider_signal) <= 64))),
    CONSTRAINT mt5_credit_reference_form_check CHECK ((reference_form = ANY (ARRAY[1, 2]))),
    CONSTRAINT mt5_credit_risk_facts_deposit CHECK (((kind = 'deposit'::text) OR ((payer_name IS NULL) AND (instrument IS NULL) AND (provider_signal IS NULL)))),
    CONSTRAINT mt5_credit_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'claimed'::text, 'unknown'::text, 'done'::text, 'failed'::text, 'held'::text]))),
    CONSTRAINT mt5_credit_withdrawal_parent CHECK ((((kind = 'withdrawal'::text) AND (direction = 'debit'::text) AND (withdrawal_id IS NOT NULL)) OR ((kind <> 'withdrawal'::text) AND ((withdrawal_id IS NULL) OR (kind = 'correction'::text)))))
);


ALTER TABLE mt5credit.mt5_credit OWNER TO mt5credit_owner;

--
-- Name: TABLE mt5_credit; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.mt5_credit IS 'One intended MT5 balance deal per provider payment, refund or chargeback, with the state of the attempt to make it.';


--
-- Name: COLUMN mt5_credit.amount_minor; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.mt5_credit.amount_minor IS 'Minor units of currency (the MT5 account''s currency); the sign of the balance operation comes from direction.';


--
-- Name: COLUMN mt5_credit.next_check_at; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.mt5_credit.next_check_at IS 'unknown only: not before this time will a resolver look it up again';


--
-- Name: COLUMN mt5_credit.deployment_tag; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.mt5_credit.deployment_tag IS 'the deployment tag when it was made (036); its MT5 comment is <tag>:<reference>, or the reference alone when NULL';


--
-- Name: COLUMN mt5_credit.reference_form; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.mt5_credit.reference_form IS '1: numbered (dep:<id>), credits made before 066; 2: a payment''s credit named by its payment (066)';


--
-- Name: COLUMN mt5_credit.reference; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.mt5_credit.reference IS 'The compact reference in the MT5 deal''s comment: a payment''s credit is named by its payment (dep:<18 hex digits>, 066), the same on every timeline; corrections and withdrawal debits by their number.';


--
-- Name: COLUMN mt5_credit.look_from; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.mt5_credit.look_from IS 'Where a lookup of its deal starts when that is before it was made: the lost timeline of a rewind (066); NULL: a lookback before created_at';


--
-- Name: COLUMN mt5_credit.held_for; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.mt5_credit.held_for IS 'The risk rules a deposit''s credit tripped as it was born, each with the figures that tripped it (079); NULL: none.  Never changes.';


--
-- Name: COLUMN mt5_credit.payer_name; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.mt5_credit.payer_name IS 'The payer''s name as the provider signed it (082), read only while the payer_name rule is in force.  Never changes.';


--
-- Name: COLUMN mt5_credit.instrument; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.mt5_credit.instrument IS 'The provider''s fingerprint of the card (082), read only while first_instrument is in force.  Never changes.';


--
-- Name: COLUMN mt5_credit.provider_signal; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.mt5_credit.provider_signal IS 'The provider''s own risk flag on the payment (082), read only while provider_signal is in force.  Never changes.';


--
-- Name: COLUMN mt5_credit.payer_name_erased_at; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.mt5_credit.payer_name_erased_at IS 'When retention erased payer_name, its event''s body emptied (090).';


--
-- Name: mt5_credit_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.mt5_credit ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.mt5_credit_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: outbound_attempt; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.outbound_attempt (
    id bigint NOT NULL,
    message_id bigint NOT NULL,
    endpoint text NOT NULL,
    attempt integer NOT NULL,
    at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    sender text NOT NULL,
    outcome text NOT NULL,
    http_status integer,
    error text,
    CONSTRAINT outbound_attempt_attempt_check CHECK ((attempt > 0)),
    CONSTRAINT outbound_attempt_outcome_check CHECK ((outcome = ANY (ARRAY['delivered'::text, 'failed'::text, 'exhausted'::text, 'lease_expired'::text])))
);


ALTER TABLE mt5credit.outbound_attempt OWNER TO mt5credit_owner;

--
-- Name: outbound_attempt_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.outbound_attempt ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.outbound_attempt_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: outbound_delivery; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.outbound_delivery (
    message_id bigint NOT NULL,
    endpoint text NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    next_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    claimed_by text,
    lease_expires_at timestamp with time zone,
    last_http_status integer,
    last_error text,
    delivered_at timestamp with time zone,
    exhausted_at timestamp with time zone,
    CONSTRAINT outbound_delivery_attempts_check CHECK ((attempts >= 0)),
    CONSTRAINT outbound_delivery_delivered CHECK (((status = 'delivered'::text) = (delivered_at IS NOT NULL))),
    CONSTRAINT outbound_delivery_exhausted CHECK (((status = 'exhausted'::text) = (exhausted_at IS NOT NULL))),
    CONSTRAINT outbound_delivery_lease CHECK (((status = 'sending'::text) = ((lease_expires_at IS NOT NULL) AND (claimed_by IS NOT NULL)))),
    CONSTRAINT outbound_delivery_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'sending'::text, 'delivered'::text, 'exhausted'::text])))
);


ALTER TABLE mt5credit.outbound_delivery OWNER TO mt5credit_owner;

--
-- Name: outbound_endpoint; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.outbound_endpoint (
    name text NOT NULL,
    registered_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    registered_by text NOT NULL,
    failing_since timestamp with time zone,
    last_success_at timestamp with time zone,
    disabled_at timestamp with time zone,
    disabled_why text,
    retired_at timestamp with time zone,
    CONSTRAINT outbound_endpoint_disabled_why CHECK (((disabled_at IS NULL) = (disabled_why IS NULL))),
    CONSTRAINT outbound_endpoint_name_check CHECK ((name ~ '^[A-Za-z0-9_.-]{1,63}$'::text)),
    CONSTRAINT outbound_endpoint_retired_is_disabled CHECK (((retired_at IS NULL) OR (disabled_at IS NOT NULL)))
);


ALTER TABLE mt5credit.outbound_endpoint OWNER TO mt5credit_owner;

--
-- Name: TABLE outbound_endpoint; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.outbound_endpoint IS 'A receiver of outbound events, registered by the sender configured for it (095); its url and secrets are the sender''s configuration. Disabled after failing for outbound_disable_after; enabled again by a person (outbound_endpoint_enable()); retired by a person when it is gone (outbound_endpoint_retire()): no new event is made for it.';


--
-- Name: outbound_message; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.outbound_message (
    id bigint NOT NULL,
    webhook_id text DEFAULT ('msg_'::text || replace((gen_random_uuid())::text, '-'::text, ''::text)) NOT NULL,
    type text NOT NULL,
    subject text NOT NULL,
    seq integer NOT NULL,
    body text NOT NULL,
    created_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    CONSTRAINT outbound_message_seq_check CHECK ((seq > 0)),
    CONSTRAINT outbound_message_subject_check CHECK ((subject ~ '^(deposit|withdrawal|case):[0-9]+$'::text)),
    CONSTRAINT outbound_message_type_check CHECK ((type = ANY (ARRAY['deposit.credited'::text, 'deposit.failed'::text, 'deposit.held'::text, 'deposit.returned'::text, 'deposit.refunded'::text, 'deposit.chargeback'::text, 'deposit.chargeback_reversed'::text, 'withdrawal.approved'::text, 'withdrawal.rejected'::text, 'withdrawal.cancelled'::text, 'withdrawal.debited'::text, 'withdrawal.paid'::text, 'withdrawal.failed'::text, 'case.opened'::text]))),
    CONSTRAINT outbound_message_webhook_id_check CHECK ((webhook_id ~ '^msg_[0-9a-f]{32}$'::text))
);


ALTER TABLE mt5credit.outbound_message OWNER TO mt5credit_owner;

--
-- Name: TABLE outbound_message; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.outbound_message IS 'One outbound event, written by the transaction that made its change (095).  body is what is signed and sent, every time; never changed.';


--
-- Name: outbound_message_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.outbound_message ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.outbound_message_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: outbound_replay; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.outbound_replay (
    id bigint NOT NULL,
    replayed_by text DEFAULT mt5credit.person() NOT NULL,
    replayed_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    reason text NOT NULL,
    webhook_id text,
    since timestamp with time zone,
    endpoint text,
    deliveries integer NOT NULL,
    CONSTRAINT outbound_replay_check CHECK (((webhook_id IS NULL) <> (since IS NULL))),
    CONSTRAINT outbound_replay_reason_check CHECK ((btrim(reason) <> ''::text))
);


ALTER TABLE mt5credit.outbound_replay OWNER TO mt5credit_owner;

--
-- Name: outbound_replay_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.outbound_replay ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.outbound_replay_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: outbound_sequence; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.outbound_sequence (
    subject text NOT NULL,
    last integer NOT NULL,
    CONSTRAINT outbound_sequence_last_check CHECK ((last > 0))
);


ALTER TABLE mt5credit.outbound_sequence OWNER TO mt5credit_owner;

--
-- Name: pause; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.pause (
    id bigint NOT NULL,
    scope text NOT NULL,
    target text NOT NULL,
    reason text NOT NULL,
    paused_by text NOT NULL,
    paused_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    resumed_by text,
    resumed_at timestamp with time zone,
    resume_note text,
    CONSTRAINT pause_check CHECK (((scope <> 'provider'::text) OR (target ~ '^[a-z][a-z0-9_-]{0,31}$'::text))),
    CONSTRAINT pause_check1 CHECK (((scope <> 'kind'::text) OR (target = ANY (ARRAY['deposit'::text, 'refund'::text, 'chargeback'::text, 'correction'::text, 'withdrawal'::text])))),
    CONSTRAINT pause_check2 CHECK (((scope <> 'server'::text) OR (target ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'::text))),
    CONSTRAINT pause_check3 CHECK (((resumed_by IS NULL) = (resumed_at IS NULL))),
    CONSTRAINT pause_check4 CHECK (((resume_note IS NULL) OR (resumed_at IS NOT NULL))),
    CONSTRAINT pause_check5 CHECK (((resumed_at IS NULL) OR (resumed_at >= paused_at))),
    CONSTRAINT pause_paused_by_check CHECK ((paused_by <> ''::text)),
    CONSTRAINT pause_reason_check CHECK (((length(btrim(reason)) >= 3) AND (length(reason) <= 1000))),
    CONSTRAINT pause_resume_note_check CHECK ((length(resume_note) <= 1000)),
    CONSTRAINT pause_resumed_by_check CHECK ((resumed_by <> ''::text)),
    CONSTRAINT pause_scope_check CHECK ((scope = ANY (ARRAY['server'::text, 'provider'::text, 'kind'::text])))
);


ALTER TABLE mt5credit.pause OWNER TO mt5credit_owner;

--
-- Name: TABLE pause; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.pause IS 'Crediting paused per MT5 server, provider or credit kind: who, why, when, and who resumed it; resumed rows are the history.';


--
-- Name: pause_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.pause ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.pause_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: payload_format; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.payload_format (
    payload text NOT NULL,
    event_id jsonpath NOT NULL,
    event_type jsonpath NOT NULL,
    event_part jsonpath,
    about text NOT NULL,
    CONSTRAINT payload_format_about_check CHECK (((length(about) >= 1) AND (length(about) <= 500))),
    CONSTRAINT payload_format_event_id_check CHECK (((event_id)::text ~~ 'strict %'::text)),
    CONSTRAINT payload_format_event_part_check CHECK (((event_part)::text ~~ 'strict %'::text)),
    CONSTRAINT payload_format_event_type_check CHECK (((event_type)::text ~~ 'strict %'::text)),
    CONSTRAINT payload_format_payload_check CHECK ((payload ~ '^[a-z][a-z0-9_]{0,31}$'::text))
);


ALTER TABLE mt5credit.payload_format OWNER TO mt5credit_owner;

--
-- Name: TABLE payload_format; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.payload_format IS 'A provider payload format (076): where its events'' id and type are; payload_rule says what each type means';


--
-- Name: payload_risk; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.payload_risk (
    payload text NOT NULL,
    event_type text NOT NULL,
    payer_name jsonpath,
    instrument jsonpath,
    signal jsonpath,
    signal_when text[],
    CONSTRAINT payload_risk_check CHECK (((signal IS NULL) = (signal_when IS NULL))),
    CONSTRAINT payload_risk_check1 CHECK (((payer_name IS NOT NULL) OR (instrument IS NOT NULL) OR (signal IS NOT NULL))),
    CONSTRAINT payload_risk_event_type_check CHECK (((length(event_type) >= 1) AND (length(event_type) <= 255))),
    CONSTRAINT payload_risk_instrument_check CHECK (((instrument)::text ~~ 'strict %'::text)),
    CONSTRAINT payload_risk_payer_name_check CHECK (((payer_name)::text ~~ 'strict %'::text)),
    CONSTRAINT payload_risk_payload_check CHECK ((payload <> ALL (ARRAY['adyen'::text, 'adyen_manual'::text]))),
    CONSTRAINT payload_risk_signal_check CHECK (((signal)::text ~~ 'strict %'::text)),
    CONSTRAINT payload_risk_signal_when_check CHECK ((cardinality(signal_when) > 0))
);


ALTER TABLE mt5credit.payload_risk OWNER TO mt5credit_owner;

--
-- Name: TABLE payload_risk; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.payload_risk IS 'Where a format''s paid events carry the payer''s name, the card''s fingerprint and the provider''s risk flag (082), for the risk rules.';


--
-- Name: payload_rule; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.payload_rule (
    payload text NOT NULL,
    event_type text NOT NULL,
    step smallint NOT NULL,
    only_if jsonpath,
    action text NOT NULL,
    payment jsonpath,
    key_prefix text DEFAULT ''::text NOT NULL,
    key_suffix text DEFAULT ''::text NOT NULL,
    original jsonpath,
    deposit jsonpath,
    amount jsonpath,
    amount_form text,
    received jsonpath,
    currency jsonpath,
    note jsonpath,
    note_text text,
    CONSTRAINT payload_rule_action_check CHECK ((action = ANY (ARRAY['paid'::text, 'pending'::text, 'failed'::text, 'expired'::text, 'refund'::text, 'chargeback'::text, 'chargeback_reversal'::text, 'payout_status'::text, 'review'::text, 'ignore'::text]))),
    CONSTRAINT payload_rule_amount_form_check CHECK ((amount_form = ANY (ARRAY['minor'::text, 'decimal'::text]))),
    CONSTRAINT payload_rule_check CHECK (((amount IS NULL) = (amount_form IS NULL))),
    CONSTRAINT payload_rule_check1 CHECK (((received IS NULL) OR (amount IS NOT NULL))),
    CONSTRAINT payload_rule_check2 CHECK (((action <> 'paid'::text) OR ((payment IS NOT NULL) AND (deposit IS NOT NULL) AND (amount IS NOT NULL) AND (currency IS NOT NULL)))),
    CONSTRAINT payload_rule_check3 CHECK (((action <> ALL (ARRAY['refund'::text, 'chargeback'::text, 'chargeback_reversal'::text])) OR ((payment IS NOT NULL) AND (original IS NOT NULL) AND (amount IS NOT NULL) AND (currency IS NOT NULL)))),
    CONSTRAINT payload_rule_check4 CHECK (((action <> ALL (ARRAY['review'::text, 'ignore'::text])) OR (note_text IS NOT NULL))),
    CONSTRAINT payload_rule_check5 CHECK (((COALESCE((payment)::text, 'strict '::text) ~~ 'strict %'::text) AND (COALESCE((original)::text, 'strict '::text) ~~ 'strict %'::text) AND (COALESCE((deposit)::text, 'strict '::text) ~~ 'strict %'::text) AND (COALESCE((amount)::text, 'strict '::text) ~~ 'strict %'::text) AND (COALESCE((received)::text, 'strict '::text) ~~ 'strict %'::text) AND (COALESCE((currency)::text, 'strict '::text) ~~ 'strict %'::text) AND (COALESCE((note)::text, 'strict '::text) ~~ 'strict %'::text))),
    CONSTRAINT payload_rule_event_type_check CHECK (((length(event_type) >= 1) AND (length(event_type) <= 255))),
    CONSTRAINT payload_rule_payload_check CHECK ((payload <> 'stripe'::text)),
    CONSTRAINT payload_rule_step_check CHECK (((step >= 1) AND (step <= 9)))
);


ALTER TABLE mt5credit.payload_rule OWNER TO mt5credit_owner;

--
-- Name: TABLE payload_rule; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.payload_rule IS 'What a format''s event type means (076): the first rule by step whose only_if holds decides; a type without a rule is no money';


--
-- Name: payout_currency; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.payout_currency (
    provider text NOT NULL,
    currency text NOT NULL,
    CONSTRAINT payout_currency_provider_check CHECK ((provider ~ '^[a-z][a-z0-9_-]{0,31}$'::text))
);


ALTER TABLE mt5credit.payout_currency OWNER TO mt5credit_owner;

--
-- Name: TABLE payout_currency; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.payout_currency IS 'The currencies each payout provider can pay out; a withdrawal in any other is refused before its MT5 debit (035).';


--
-- Name: payout_history; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.payout_history (
    id bigint NOT NULL,
    payout_id bigint NOT NULL,
    from_status text,
    to_status text NOT NULL,
    attempts integer NOT NULL,
    at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    actor text NOT NULL,
    detail jsonb DEFAULT '{}'::jsonb NOT NULL,
    CONSTRAINT payout_history_check CHECK ((from_status IS DISTINCT FROM to_status))
);


ALTER TABLE mt5credit.payout_history OWNER TO mt5credit_owner;

--
-- Name: payout_history_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.payout_history ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.payout_history_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: payout_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.payout ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.payout_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: payout_transition; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.payout_transition (
    from_status text NOT NULL,
    to_status text NOT NULL,
    why text NOT NULL
);


ALTER TABLE mt5credit.payout_transition OWNER TO mt5credit_owner;

--
-- Name: person_step_up; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.person_step_up (
    person text NOT NULL,
    step bigint NOT NULL,
    action text NOT NULL,
    digest text NOT NULL,
    xact xid8 NOT NULL,
    at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    used_at timestamp with time zone,
    CONSTRAINT person_step_up_check CHECK ((used_at >= at)),
    CONSTRAINT person_step_up_digest_check CHECK ((digest ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT person_step_up_step_check CHECK ((step > 0))
);


ALTER TABLE mt5credit.person_step_up OWNER TO mt5credit_owner;

--
-- Name: person_step_up_refusal; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.person_step_up_refusal (
    id bigint NOT NULL,
    person text NOT NULL,
    action text NOT NULL,
    digest text NOT NULL,
    reason text NOT NULL,
    tries_left integer,
    locked_until timestamp with time zone,
    at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    CONSTRAINT person_step_up_refusal_check CHECK (((locked_until IS NOT NULL) = (NOT (tries_left IS DISTINCT FROM 0)))),
    CONSTRAINT person_step_up_refusal_check1 CHECK (((reason <> 'locked'::text) OR (tries_left = 0))),
    CONSTRAINT person_step_up_refusal_digest_check CHECK ((digest ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT person_step_up_refusal_reason_check CHECK ((reason = ANY (ARRAY['no_code'::text, 'not_enrolled'::text, 'wrong_code'::text, 'code_used'::text, 'locked'::text]))),
    CONSTRAINT person_step_up_refusal_tries_left_check CHECK (((tries_left >= 0) AND (tries_left <= 5)))
);


ALTER TABLE mt5credit.person_step_up_refusal OWNER TO mt5credit_owner;

--
-- Name: person_step_up_refusal_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.person_step_up_refusal ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.person_step_up_refusal_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: person_totp; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.person_totp (
    person oid NOT NULL,
    secret bytea NOT NULL,
    enrolled_by text NOT NULL,
    enrolled_at timestamp with time zone NOT NULL,
    last_step bigint DEFAULT 0 NOT NULL,
    tries regclass NOT NULL,
    CONSTRAINT person_totp_last_step_check CHECK ((last_step >= 0)),
    CONSTRAINT person_totp_secret_check CHECK ((octet_length(secret) = 20))
);


ALTER TABLE mt5credit.person_totp OWNER TO mt5credit_owner;

--
-- Name: TABLE person_totp; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.person_totp IS 'each person''s TOTP secret for step-up (065); no role may read it, only step_up_verify() and the enrolment functions';


--
-- Name: person_totp_history; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.person_totp_history (
    id bigint NOT NULL,
    person oid NOT NULL,
    person_name text NOT NULL,
    action text NOT NULL,
    actor text NOT NULL,
    at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    CONSTRAINT person_totp_history_action_check CHECK ((action = ANY (ARRAY['enrol'::text, 'reset'::text])))
);


ALTER TABLE mt5credit.person_totp_history OWNER TO mt5credit_owner;

--
-- Name: person_totp_history_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.person_totp_history ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.person_totp_history_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: provider_api; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.provider_api (
    provider text NOT NULL,
    asked_by text NOT NULL,
    lists_events boolean NOT NULL,
    query_types text[] DEFAULT '{}'::text[] NOT NULL,
    CONSTRAINT provider_api_asked_by_check CHECK ((asked_by ~ '^mt5credit_[a-z_]+$'::text)),
    CONSTRAINT provider_api_check CHECK ((lists_events OR (cardinality(query_types) > 0))),
    CONSTRAINT provider_api_provider_check CHECK ((provider ~ '^[a-z][a-z0-9_-]{0,31}$'::text)),
    CONSTRAINT provider_api_query_types_check CHECK (((array_position(query_types, NULL::text) IS NULL) AND (array_to_string(query_types, ' '::text) ~ '^([a-z][a-z0-9_.]*( |$))*$'::text)))
);


ALTER TABLE mt5credit.provider_api OWNER TO mt5credit_owner;

--
-- Name: TABLE provider_api; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.provider_api IS 'The providers whose API a program asks, which group role asks, and for what; an answer about any other is refused with a case (064). Configuration: the schema owner edits it.';


--
-- Name: provider_payload; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.provider_payload (
    provider text NOT NULL,
    payload text NOT NULL,
    added_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT provider_payload_check CHECK (((provider = 'stripe'::text) = (payload = 'stripe'::text))),
    CONSTRAINT provider_payload_provider_check CHECK ((provider ~ '^[a-z0-9][a-z0-9_-]{0,31}$'::text))
);


ALTER TABLE mt5credit.provider_payload OWNER TO mt5credit_owner;

--
-- Name: TABLE provider_payload; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.provider_payload IS 'The format each provider''s bodies are read in (075); a provider without a row is read as the generic payload';


--
-- Name: recon_clock; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.recon_clock (
    run_id bigint NOT NULL,
    mt5_server text NOT NULL,
    offset_s integer NOT NULL,
    measured_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    CONSTRAINT recon_clock_offset_s_check CHECK (((offset_s >= '-50400'::integer) AND (offset_s <= 50400)))
);


ALTER TABLE mt5credit.recon_clock OWNER TO mt5credit_owner;

--
-- Name: TABLE recon_clock; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.recon_clock IS 'The UTC offset of each MT5 server''s clock as each reconciliation run measured it; append-only.';


--
-- Name: recon_control; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.recon_control (
    run_id bigint NOT NULL,
    payout_id text NOT NULL,
    line_no bigint NOT NULL,
    currency text NOT NULL,
    amount_minor bigint NOT NULL,
    row_count bigint,
    CONSTRAINT recon_control_row_count_check CHECK ((row_count >= 0))
);


ALTER TABLE mt5credit.recon_control OWNER TO mt5credit_owner;

--
-- Name: recon_control_in; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE UNLOGGED TABLE mt5credit.recon_control_in (
    run_id bigint NOT NULL,
    line_no bigint NOT NULL,
    payout_id text NOT NULL,
    currency text NOT NULL,
    amount_minor bigint NOT NULL,
    row_count bigint
);


ALTER TABLE mt5credit.recon_control_in OWNER TO mt5credit_owner;

--
-- Name: recon_count; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.recon_count (
    run_id bigint NOT NULL,
    dimension text NOT NULL,
    name text NOT NULL,
    n bigint NOT NULL,
    CONSTRAINT recon_count_dimension_check CHECK ((dimension = ANY (ARRAY['summary'::text, 'kind'::text, 'matched'::text, 'mismatched'::text]))),
    CONSTRAINT recon_count_n_check CHECK ((n >= 0))
);


ALTER TABLE mt5credit.recon_count OWNER TO mt5credit_owner;

--
-- Name: recon_deal; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.recon_deal (
    run_id bigint NOT NULL,
    mt5_server text NOT NULL,
    deal_ticket bigint NOT NULL,
    mt5_login bigint NOT NULL,
    amount_minor bigint NOT NULL,
    currency text NOT NULL,
    comment text NOT NULL,
    deal_time timestamp with time zone NOT NULL,
    mt5_comment text,
    fetched_by text DEFAULT 'window'::text NOT NULL,
    CONSTRAINT recon_deal_deal_ticket_check CHECK ((deal_ticket > 0)),
    CONSTRAINT recon_deal_fetched_by_check CHECK ((fetched_by = ANY (ARRAY['window'::text, 'ticket'::text]))),
    CONSTRAINT recon_deal_mt5_login_check CHECK ((mt5_login > 0))
);


ALTER TABLE mt5credit.recon_deal OWNER TO mt5credit_owner;

--
-- Name: COLUMN recon_deal.mt5_comment; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.recon_deal.mt5_comment IS 'the comment as MT5 holds it; comment is the same without this database''s deployment tag (036)';


--
-- Name: COLUMN recon_deal.fetched_by; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.recon_deal.fetched_by IS 'window: in the run''s fetch of every deal of the day; ticket: asked for by a credit''s ticket, wherever it lies in time (040)';


--
-- Name: recon_deal_in; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE UNLOGGED TABLE mt5credit.recon_deal_in (
    run_id bigint NOT NULL,
    mt5_server text NOT NULL,
    deal_ticket bigint NOT NULL,
    mt5_login bigint NOT NULL,
    amount_minor bigint NOT NULL,
    currency text NOT NULL,
    comment text NOT NULL,
    deal_epoch bigint NOT NULL,
    server_time bigint,
    time_zone text,
    by_ticket boolean DEFAULT false NOT NULL
);


ALTER TABLE mt5credit.recon_deal_in OWNER TO mt5credit_owner;

--
-- Name: recon_item; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.recon_item (
    id bigint NOT NULL,
    run_id bigint NOT NULL,
    kind text NOT NULL,
    item_key text NOT NULL,
    severity text NOT NULL,
    movement text NOT NULL,
    amount_minor bigint,
    currency text,
    settlement jsonb,
    credit jsonb,
    deals jsonb DEFAULT '[]'::jsonb NOT NULL,
    case_id bigint NOT NULL,
    CONSTRAINT recon_item_deals_check CHECK ((jsonb_typeof(deals) = 'array'::text)),
    CONSTRAINT recon_item_kind_check CHECK ((kind = ANY (ARRAY['settled_not_credited'::text, 'settled_not_debited'::text, 'credited_not_settled'::text, 'debited_not_settled'::text, 'credit_without_deal'::text, 'deal_unknown_reference'::text, 'deal_duplicate'::text, 'deal_without_reference'::text, 'amount_mismatch'::text, 'currency_mismatch'::text, 'login_mismatch'::text, 'open_at_cutoff'::text, 'payout_state_mismatch'::text, 'payout_id_mismatch'::text, 'leg_state_mismatch'::text]))),
    CONSTRAINT recon_item_movement_check CHECK ((movement = ANY (ARRAY['payment'::text, 'refund'::text, 'chargeback'::text, 'chargeback_reversal'::text, 'correction'::text, 'withdrawal'::text, 'unattributed'::text]))),
    CONSTRAINT recon_item_severity_check CHECK ((severity = ANY (ARRAY['low'::text, 'medium'::text, 'high'::text, 'critical'::text])))
);


ALTER TABLE mt5credit.recon_item OWNER TO mt5credit_owner;

--
-- Name: recon_item_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.recon_item ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.recon_item_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: recon_matched_later; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.recon_matched_later (
    run_id bigint NOT NULL,
    side text NOT NULL,
    item_key text NOT NULL,
    since_day date NOT NULL,
    first_run_id bigint NOT NULL,
    pair_key text NOT NULL,
    CONSTRAINT recon_matched_later_side_check CHECK ((side = ANY (ARRAY['settlement'::text, 'credit'::text])))
);


ALTER TABLE mt5credit.recon_matched_later OWNER TO mt5credit_owner;

--
-- Name: recon_paired_ahead; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.recon_paired_ahead (
    run_id bigint NOT NULL,
    credit_id bigint NOT NULL,
    pair_key text NOT NULL
);


ALTER TABLE mt5credit.recon_paired_ahead OWNER TO mt5credit_owner;

--
-- Name: recon_report; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.recon_report (
    run_id bigint NOT NULL,
    html text NOT NULL,
    html_sha256 text NOT NULL,
    stored_by text DEFAULT mt5credit.person() NOT NULL,
    stored_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    CONSTRAINT recon_report_check CHECK ((html_sha256 = encode(sha256(convert_to(html, 'UTF8'::name)), 'hex'::text))),
    CONSTRAINT recon_report_html_check CHECK ((length(html) > 0)),
    CONSTRAINT recon_report_html_sha256_check CHECK ((html_sha256 ~ '^[0-9a-f]{64}$'::text))
);


ALTER TABLE mt5credit.recon_report OWNER TO mt5credit_owner;

--
-- Name: TABLE recon_report; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.recon_report IS 'Each finished reconciliation run''s HTML report, as the job wrote it (058); append-only.';


--
-- Name: recon_run_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.recon_run ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.recon_run_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: recon_settlement; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.recon_settlement (
    run_id bigint NOT NULL,
    row_id text NOT NULL,
    line_no bigint NOT NULL,
    category text NOT NULL,
    provider_key text,
    payment_id text,
    deposit_ref text,
    currency text NOT NULL,
    gross_minor bigint NOT NULL,
    fee_minor bigint NOT NULL,
    net_minor bigint NOT NULL,
    created_at timestamp with time zone NOT NULL,
    payout_id text,
    CONSTRAINT recon_settlement_category_check CHECK ((category = ANY (ARRAY['payment'::text, 'refund'::text, 'chargeback'::text, 'chargeback_reversal'::text, 'fee'::text, 'payout'::text, 'other'::text, 'withdrawal'::text]))),
    CONSTRAINT recon_settlement_check CHECK ((net_minor = (gross_minor - fee_minor))),
    CONSTRAINT recon_settlement_check1 CHECK (((category = ANY (ARRAY['fee'::text, 'payout'::text, 'other'::text])) OR (provider_key IS NOT NULL))),
    CONSTRAINT recon_settlement_line_no_check CHECK ((line_no > 0)),
    CONSTRAINT recon_settlement_row_id_check CHECK (((length(row_id) >= 1) AND (length(row_id) <= 255)))
);


ALTER TABLE mt5credit.recon_settlement OWNER TO mt5credit_owner;

--
-- Name: recon_settlement_in; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE UNLOGGED TABLE mt5credit.recon_settlement_in (
    run_id bigint NOT NULL,
    line_no bigint NOT NULL,
    row_id text NOT NULL,
    category text NOT NULL,
    provider_key text,
    payment_id text,
    deposit_ref text,
    currency text NOT NULL,
    gross_minor bigint NOT NULL,
    fee_minor bigint NOT NULL,
    net_minor bigint NOT NULL,
    created_text text NOT NULL,
    created_utc boolean NOT NULL,
    payout_id text
);


ALTER TABLE mt5credit.recon_settlement_in OWNER TO mt5credit_owner;

--
-- Name: recon_transit_credit; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.recon_transit_credit (
    run_id bigint NOT NULL,
    credit_id bigint NOT NULL,
    since_day date NOT NULL,
    first_run_id bigint NOT NULL,
    age_days integer NOT NULL,
    movement text NOT NULL,
    reference text NOT NULL,
    status text NOT NULL,
    amount_minor bigint NOT NULL,
    currency text NOT NULL,
    CONSTRAINT recon_transit_credit_age_days_check CHECK ((age_days >= 0))
);


ALTER TABLE mt5credit.recon_transit_credit OWNER TO mt5credit_owner;

--
-- Name: recon_transit_settlement; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.recon_transit_settlement (
    run_id bigint NOT NULL,
    settlement_run_id bigint NOT NULL,
    since_day date NOT NULL,
    first_run_id bigint NOT NULL,
    age_days integer NOT NULL,
    row_id text NOT NULL,
    line_no bigint NOT NULL,
    category text NOT NULL,
    provider_key text NOT NULL,
    payment_id text,
    deposit_ref text,
    currency text NOT NULL,
    gross_minor bigint NOT NULL,
    fee_minor bigint NOT NULL,
    net_minor bigint NOT NULL,
    created_at timestamp with time zone NOT NULL,
    payout_id text,
    overdue boolean DEFAULT false NOT NULL,
    CONSTRAINT recon_transit_settlement_age_days_check CHECK ((age_days >= 0))
);


ALTER TABLE mt5credit.recon_transit_settlement OWNER TO mt5credit_owner;

--
-- Name: COLUMN recon_transit_settlement.overdue; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.recon_transit_settlement.overdue IS 'past its grace with no credit: reported as a break by the run that found it so, carried inside the window only so that a late credit pairs with it; not in transit (067)';


--
-- Name: refund_window; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.refund_window (
    provider text NOT NULL,
    days integer NOT NULL,
    CONSTRAINT refund_window_days_check CHECK (((days >= 1) AND (days <= 3650))),
    CONSTRAINT refund_window_provider_check CHECK ((provider ~ '^[a-z][a-z0-9_-]{0,31}$'::text))
);


ALTER TABLE mt5credit.refund_window OWNER TO mt5credit_owner;

--
-- Name: TABLE refund_window; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.refund_window IS 'How long after a payment each provider can still refund it; a provider absent here refunds nothing (configuration: the schema owner edits it).';


--
-- Name: risk_rule_change; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.risk_rule_change (
    id bigint NOT NULL,
    rule text NOT NULL,
    currency text,
    provider text,
    limit_minor bigint,
    limit_count integer,
    remove boolean DEFAULT false NOT NULL,
    note text NOT NULL,
    proposed_by text NOT NULL,
    proposed_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    status text DEFAULT 'proposed'::text NOT NULL,
    decided_by text,
    decided_at timestamp with time zone,
    decision_note text,
    rule_before jsonb,
    limit_volume bigint,
    CONSTRAINT risk_rule_change_check CHECK ((remove OR ((limit_minor IS NOT NULL) = (rule = ANY (ARRAY['credit_amount'::text, 'login_sum_24h'::text, 'client_sum_24h'::text, 'withdrawal_amount'::text]))))),
    CONSTRAINT risk_rule_change_check1 CHECK ((remove OR ((limit_count IS NOT NULL) = (rule = ANY (ARRAY['login_count_24h'::text, 'client_count_24h'::text]))))),
    CONSTRAINT risk_rule_change_check2 CHECK (((NOT remove) OR ((limit_minor IS NULL) AND (limit_count IS NULL) AND (limit_volume IS NULL)))),
    CONSTRAINT risk_rule_change_check3 CHECK (((rule <> ALL (ARRAY['credit_amount'::text, 'login_sum_24h'::text, 'client_sum_24h'::text, 'withdrawal_amount'::text])) OR (currency IS NOT NULL))),
    CONSTRAINT risk_rule_change_check4 CHECK (((status = 'proposed'::text) = ((decided_by IS NULL) AND (decided_at IS NULL)))),
    CONSTRAINT risk_rule_change_check5 CHECK (((status <> 'withdrawn'::text) OR (decided_by = proposed_by))),
    CONSTRAINT risk_rule_change_four_eyes CHECK (((status = ANY (ARRAY['proposed'::text, 'withdrawn'::text])) OR (decided_by <> proposed_by))),
    CONSTRAINT risk_rule_change_limit_count_check CHECK ((limit_count > 0)),
    CONSTRAINT risk_rule_change_limit_minor_check CHECK ((limit_minor > 0)),
    CONSTRAINT risk_rule_change_limit_volume_check CHECK ((limit_volume > 0)),
    CONSTRAINT risk_rule_change_note_check CHECK (((length(note) >= 1) AND (length(note) <= 4000))),
    CONSTRAINT risk_rule_change_provider_check CHECK ((provider ~ '^[a-z][a-z0-9_-]{0,31}$'::text)),
    CONSTRAINT risk_rule_change_rule_check CHECK ((rule = ANY (ARRAY['credit_amount'::text, 'login_count_24h'::text, 'login_sum_24h'::text, 'client_count_24h'::text, 'client_sum_24h'::text, 'first_deposit'::text, 'first_provider'::text, 'payer_name'::text, 'first_instrument'::text, 'provider_signal'::text, 'withdrawal_amount'::text, 'withdrawal_trading'::text]))),
    CONSTRAINT risk_rule_change_status_check CHECK ((status = ANY (ARRAY['proposed'::text, 'approved'::text, 'rejected'::text, 'withdrawn'::text]))),
    CONSTRAINT risk_rule_change_volume CHECK ((remove OR ((limit_volume IS NOT NULL) = (rule = 'withdrawal_trading'::text))))
);


ALTER TABLE mt5credit.risk_rule_change OWNER TO mt5credit_owner;

--
-- Name: TABLE risk_rule_change; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.risk_rule_change IS 'Every change to a risk rule, proposed by one person and approved or rejected by another (079); the history of the rules.';


--
-- Name: risk_rule_change_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.risk_rule_change ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.risk_rule_change_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: risk_rule_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.risk_rule ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.risk_rule_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: schema_migration; Type: TABLE; Schema: mt5credit; Owner: mt5
--

CREATE TABLE mt5credit.schema_migration (
    version integer NOT NULL,
    name text NOT NULL,
    sha256 text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL,
    applied_by text DEFAULT SESSION_USER NOT NULL,
    CONSTRAINT schema_migration_sha256_check CHECK ((sha256 ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT schema_migration_version_check CHECK ((version > 0))
);


ALTER TABLE mt5credit.schema_migration OWNER TO mt5;

--
-- Name: settle_verification; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.settle_verification (
    proposal_id bigint NOT NULL,
    credit_id bigint NOT NULL,
    deal_ticket bigint NOT NULL,
    outcome text NOT NULL,
    detail jsonb NOT NULL,
    verified_by text NOT NULL,
    verified_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    CONSTRAINT settle_verification_deal_ticket_check CHECK ((deal_ticket > 0)),
    CONSTRAINT settle_verification_detail_check CHECK ((jsonb_typeof(detail) = 'object'::text)),
    CONSTRAINT settle_verification_outcome_check CHECK ((outcome = ANY (ARRAY['verified'::text, 'refused'::text])))
);


ALTER TABLE mt5credit.settle_verification OWNER TO mt5credit_owner;

--
-- Name: TABLE settle_verification; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.settle_verification IS 'The worker''s check of a ticket two people named for an unknown credit (settle_done): verified, the credit became done with it; refused, nothing was recorded and the case went back to a person.';


--
-- Name: webhook_event_conflict; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.webhook_event_conflict (
    id bigint NOT NULL,
    event_id bigint NOT NULL,
    raw_body bytea NOT NULL,
    body_sha256 bytea NOT NULL,
    signature_scheme text NOT NULL,
    signed_at timestamp with time zone,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    request_id mt5credit.request_id,
    body_redacted_at timestamp with time zone,
    CONSTRAINT webhook_event_conflict_body_sha256_check CHECK ((length(body_sha256) = 32)),
    CONSTRAINT webhook_event_conflict_redacted_empty CHECK (((body_redacted_at IS NULL) OR (raw_body = '\x'::bytea)))
);


ALTER TABLE mt5credit.webhook_event_conflict OWNER TO mt5credit_owner;

--
-- Name: webhook_event_conflict_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.webhook_event_conflict ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.webhook_event_conflict_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: webhook_event_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.webhook_event ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.webhook_event_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: webhook_event_replay_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.webhook_event_replay ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.webhook_event_replay_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: webhook_malformed; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.webhook_malformed (
    id bigint NOT NULL,
    provider text NOT NULL,
    raw_body bytea NOT NULL,
    body_sha256 bytea NOT NULL,
    signature_scheme text NOT NULL,
    signed_at timestamp with time zone,
    reason text NOT NULL,
    deliveries integer DEFAULT 1 NOT NULL,
    first_received_at timestamp with time zone DEFAULT now() NOT NULL,
    last_received_at timestamp with time zone DEFAULT now() NOT NULL,
    first_request_id mt5credit.request_id,
    last_request_id mt5credit.request_id,
    body_redacted_at timestamp with time zone,
    CONSTRAINT webhook_malformed_body_digest CHECK (((body_redacted_at IS NOT NULL) OR (body_sha256 = sha256(raw_body)))),
    CONSTRAINT webhook_malformed_body_sha256_check CHECK ((length(body_sha256) = 32)),
    CONSTRAINT webhook_malformed_deliveries_check CHECK ((deliveries > 0)),
    CONSTRAINT webhook_malformed_reason_check CHECK ((length(reason) <= 500)),
    CONSTRAINT webhook_malformed_redacted_empty CHECK (((body_redacted_at IS NULL) OR (raw_body = '\x'::bytea)))
);


ALTER TABLE mt5credit.webhook_malformed OWNER TO mt5credit_owner;

--
-- Name: TABLE webhook_malformed; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.webhook_malformed IS 'Signed deliveries that are not an event and can never be one, kept as received (once per provider and body), answered 400.';


--
-- Name: COLUMN webhook_malformed.body_redacted_at; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON COLUMN mt5credit.webhook_malformed.body_redacted_at IS 'When its body was removed under the retention policy (074); its digest stays';


--
-- Name: webhook_malformed_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.webhook_malformed ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.webhook_malformed_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: withdrawal_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.withdrawal ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.withdrawal_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: withdrawal_leg; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.withdrawal_leg (
    withdrawal_id bigint NOT NULL,
    plan_no integer NOT NULL,
    leg integer NOT NULL,
    kind text NOT NULL,
    provider text NOT NULL,
    credit_id bigint,
    payment_key text,
    amount_minor bigint NOT NULL,
    currency text NOT NULL,
    account_amount_minor bigint NOT NULL,
    fx_rate numeric,
    CONSTRAINT withdrawal_leg_account_amount_minor_check CHECK ((account_amount_minor > 0)),
    CONSTRAINT withdrawal_leg_amount_minor_check CHECK ((amount_minor > 0)),
    CONSTRAINT withdrawal_leg_check CHECK (((kind = 'refund'::text) = ((credit_id IS NOT NULL) AND (payment_key IS NOT NULL)))),
    CONSTRAINT withdrawal_leg_check1 CHECK (((kind = 'refund'::text) OR (fx_rate IS NULL))),
    CONSTRAINT withdrawal_leg_fx_rate_check CHECK ((fx_rate > (0)::numeric)),
    CONSTRAINT withdrawal_leg_kind_check CHECK ((kind = ANY (ARRAY['refund'::text, 'payout'::text]))),
    CONSTRAINT withdrawal_leg_leg_check CHECK ((leg > 0)),
    CONSTRAINT withdrawal_leg_plan_no_check CHECK ((plan_no > 0))
);


ALTER TABLE mt5credit.withdrawal_leg OWNER TO mt5credit_owner;

--
-- Name: TABLE withdrawal_leg; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.withdrawal_leg IS 'The plan of a withdrawal, one per preparation: refunds to the deposits it came from, newest first, and a payout for the rest; append-only.';


--
-- Name: withdrawal_refund_history; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.withdrawal_refund_history (
    id bigint NOT NULL,
    refund_id bigint NOT NULL,
    from_status text,
    to_status text NOT NULL,
    attempts integer NOT NULL,
    at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    actor text NOT NULL,
    detail jsonb DEFAULT '{}'::jsonb NOT NULL,
    CONSTRAINT withdrawal_refund_history_check CHECK ((from_status IS DISTINCT FROM to_status))
);


ALTER TABLE mt5credit.withdrawal_refund_history OWNER TO mt5credit_owner;

--
-- Name: withdrawal_refund_history_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.withdrawal_refund_history ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.withdrawal_refund_history_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: withdrawal_refund_id_seq; Type: SEQUENCE; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE mt5credit.withdrawal_refund ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME mt5credit.withdrawal_refund_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: withdrawal_refund_transition; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.withdrawal_refund_transition (
    from_status text NOT NULL,
    to_status text NOT NULL,
    why text NOT NULL
);


ALTER TABLE mt5credit.withdrawal_refund_transition OWNER TO mt5credit_owner;

--
-- Name: withdrawal_trading_try; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.withdrawal_trading_try (
    withdrawal_id bigint NOT NULL,
    tries integer NOT NULL,
    last_at timestamp with time zone NOT NULL,
    CONSTRAINT withdrawal_trading_try_tries_check CHECK ((tries > 0))
);


ALTER TABLE mt5credit.withdrawal_trading_try OWNER TO mt5credit_owner;

--
-- Name: TABLE withdrawal_trading_try; Type: COMMENT; Schema: mt5credit; Owner: mt5credit_owner
--

COMMENT ON TABLE mt5credit.withdrawal_trading_try IS 'How often, and when last, the worker was handed a withdrawal to read its trading (085): the least recently tried go first.';


--
-- Name: withdrawal_transition; Type: TABLE; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TABLE mt5credit.withdrawal_transition (
    from_status text NOT NULL,
    to_status text NOT NULL
);


ALTER TABLE mt5credit.withdrawal_transition OWNER TO mt5credit_owner;

--
-- Name: backfill_request backfill_request_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.backfill_request
    ADD CONSTRAINT backfill_request_pkey PRIMARY KEY (id);


--
-- Name: case_action case_action_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.case_action
    ADD CONSTRAINT case_action_pkey PRIMARY KEY (id);


--
-- Name: case case_dedupe_key_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit."case"
    ADD CONSTRAINT case_dedupe_key_key UNIQUE (dedupe_key);


--
-- Name: case case_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit."case"
    ADD CONSTRAINT case_pkey PRIMARY KEY (id);


--
-- Name: case_transition case_transition_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.case_transition
    ADD CONSTRAINT case_transition_pkey PRIMARY KEY (from_status, to_status);


--
-- Name: client_account client_account_mt5_server_mt5_login_client_id_currency_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.client_account
    ADD CONSTRAINT client_account_mt5_server_mt5_login_client_id_currency_key UNIQUE (mt5_server, mt5_login, client_id, currency);


--
-- Name: client_account client_account_mt5_server_mt5_login_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.client_account
    ADD CONSTRAINT client_account_mt5_server_mt5_login_key UNIQUE (mt5_server, mt5_login);


--
-- Name: client_account client_account_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.client_account
    ADD CONSTRAINT client_account_pkey PRIMARY KEY (id);


--
-- Name: client_name client_name_id_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.client_name
    ADD CONSTRAINT client_name_id_key UNIQUE (id);


--
-- Name: client_name client_name_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.client_name
    ADD CONSTRAINT client_name_pkey PRIMARY KEY (client_id);


--
-- Name: console_act_rate console_act_rate_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.console_act_rate
    ADD CONSTRAINT console_act_rate_pkey PRIMARY KEY (person);


--
-- Name: console_identity_history console_identity_history_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.console_identity_history
    ADD CONSTRAINT console_identity_history_pkey PRIMARY KEY (id);


--
-- Name: console_identity console_identity_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.console_identity
    ADD CONSTRAINT console_identity_pkey PRIMARY KEY (identity);


--
-- Name: credit_history credit_history_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.credit_history
    ADD CONSTRAINT credit_history_pkey PRIMARY KEY (id);


--
-- Name: credit_latency credit_latency_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.credit_latency
    ADD CONSTRAINT credit_latency_pkey PRIMARY KEY (kind, le, shard);


--
-- Name: credit_transition credit_transition_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.credit_transition
    ADD CONSTRAINT credit_transition_pkey PRIMARY KEY (from_status, to_status);


--
-- Name: currency currency_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.currency
    ADD CONSTRAINT currency_pkey PRIMARY KEY (code);


--
-- Name: database_rewind database_rewind_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.database_rewind
    ADD CONSTRAINT database_rewind_pkey PRIMARY KEY (id);


--
-- Name: database_timeline database_timeline_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.database_timeline
    ADD CONSTRAINT database_timeline_pkey PRIMARY KEY (system_identifier, timeline);


--
-- Name: deployment deployment_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.deployment
    ADD CONSTRAINT deployment_pkey PRIMARY KEY (one);


--
-- Name: deposit deposit_client_id_idempotency_key_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.deposit
    ADD CONSTRAINT deposit_client_id_idempotency_key_key UNIQUE (client_id, idempotency_key);


--
-- Name: deposit_conflict deposit_conflict_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.deposit_conflict
    ADD CONSTRAINT deposit_conflict_pkey PRIMARY KEY (id);


--
-- Name: deposit_history deposit_history_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.deposit_history
    ADD CONSTRAINT deposit_history_pkey PRIMARY KEY (id);


--
-- Name: deposit deposit_id_mt5_server_mt5_login_account_currency_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.deposit
    ADD CONSTRAINT deposit_id_mt5_server_mt5_login_account_currency_key UNIQUE (id, mt5_server, mt5_login, account_currency);


--
-- Name: deposit deposit_one_session; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.deposit
    ADD CONSTRAINT deposit_one_session UNIQUE (provider, provider_session_id);


--
-- Name: deposit deposit_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.deposit
    ADD CONSTRAINT deposit_pkey PRIMARY KEY (id);


--
-- Name: deposit deposit_reference_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.deposit
    ADD CONSTRAINT deposit_reference_key UNIQUE (reference);


--
-- Name: deposit_transition deposit_transition_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.deposit_transition
    ADD CONSTRAINT deposit_transition_pkey PRIMARY KEY (from_status, to_status);


--
-- Name: journal journal_chain_seq_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.journal
    ADD CONSTRAINT journal_chain_seq_key UNIQUE (chain, seq);


--
-- Name: journal journal_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.journal
    ADD CONSTRAINT journal_pkey PRIMARY KEY (id);


--
-- Name: money_proposal money_proposal_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.money_proposal
    ADD CONSTRAINT money_proposal_pkey PRIMARY KEY (id);


--
-- Name: mt5_credit mt5_credit_id_deposit_id_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.mt5_credit
    ADD CONSTRAINT mt5_credit_id_deposit_id_key UNIQUE (id, deposit_id);


--
-- Name: mt5_credit mt5_credit_id_withdrawal_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.mt5_credit
    ADD CONSTRAINT mt5_credit_id_withdrawal_key UNIQUE (id, withdrawal_id);


--
-- Name: mt5_credit mt5_credit_mt5_server_mt5_deal_ticket_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.mt5_credit
    ADD CONSTRAINT mt5_credit_mt5_server_mt5_deal_ticket_key UNIQUE (mt5_server, mt5_deal_ticket);


--
-- Name: mt5_credit mt5_credit_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.mt5_credit
    ADD CONSTRAINT mt5_credit_pkey PRIMARY KEY (id);


--
-- Name: mt5_credit mt5_credit_provider_provider_payment_id_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.mt5_credit
    ADD CONSTRAINT mt5_credit_provider_provider_payment_id_key UNIQUE (provider, provider_payment_id);


--
-- Name: mt5_credit mt5_credit_reference_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.mt5_credit
    ADD CONSTRAINT mt5_credit_reference_key UNIQUE (reference);


--
-- Name: mt5_credit mt5_credit_settled_debit; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.mt5_credit
    ADD CONSTRAINT mt5_credit_settled_debit UNIQUE (id, withdrawal_id, kind, status);


--
-- Name: outbound_attempt outbound_attempt_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.outbound_attempt
    ADD CONSTRAINT outbound_attempt_pkey PRIMARY KEY (id);


--
-- Name: outbound_delivery outbound_delivery_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.outbound_delivery
    ADD CONSTRAINT outbound_delivery_pkey PRIMARY KEY (message_id, endpoint);


--
-- Name: outbound_endpoint outbound_endpoint_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.outbound_endpoint
    ADD CONSTRAINT outbound_endpoint_pkey PRIMARY KEY (name);


--
-- Name: outbound_message outbound_message_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.outbound_message
    ADD CONSTRAINT outbound_message_pkey PRIMARY KEY (id);


--
-- Name: outbound_message outbound_message_subject_seq_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.outbound_message
    ADD CONSTRAINT outbound_message_subject_seq_key UNIQUE (subject, seq);


--
-- Name: outbound_message outbound_message_webhook_id_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.outbound_message
    ADD CONSTRAINT outbound_message_webhook_id_key UNIQUE (webhook_id);


--
-- Name: outbound_replay outbound_replay_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.outbound_replay
    ADD CONSTRAINT outbound_replay_pkey PRIMARY KEY (id);


--
-- Name: outbound_sequence outbound_sequence_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.outbound_sequence
    ADD CONSTRAINT outbound_sequence_pkey PRIMARY KEY (subject);


--
-- Name: pause pause_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.pause
    ADD CONSTRAINT pause_pkey PRIMARY KEY (id);


--
-- Name: payload_format payload_format_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.payload_format
    ADD CONSTRAINT payload_format_pkey PRIMARY KEY (payload);


--
-- Name: payload_risk payload_risk_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.payload_risk
    ADD CONSTRAINT payload_risk_pkey PRIMARY KEY (payload, event_type);


--
-- Name: payload_rule payload_rule_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.payload_rule
    ADD CONSTRAINT payload_rule_pkey PRIMARY KEY (payload, event_type, step);


--
-- Name: payout_currency payout_currency_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.payout_currency
    ADD CONSTRAINT payout_currency_pkey PRIMARY KEY (provider, currency);


--
-- Name: payout payout_debit_credit_id_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.payout
    ADD CONSTRAINT payout_debit_credit_id_key UNIQUE (debit_credit_id);


--
-- Name: payout_history payout_history_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.payout_history
    ADD CONSTRAINT payout_history_pkey PRIMARY KEY (id);


--
-- Name: payout payout_idempotency_key_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.payout
    ADD CONSTRAINT payout_idempotency_key_key UNIQUE (idempotency_key);


--
-- Name: payout payout_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.payout
    ADD CONSTRAINT payout_pkey PRIMARY KEY (id);


--
-- Name: payout payout_reference_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.payout
    ADD CONSTRAINT payout_reference_key UNIQUE (reference);


--
-- Name: payout_transition payout_transition_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.payout_transition
    ADD CONSTRAINT payout_transition_pkey PRIMARY KEY (from_status, to_status);


--
-- Name: payout payout_withdrawal_id_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.payout
    ADD CONSTRAINT payout_withdrawal_id_key UNIQUE (withdrawal_id);


--
-- Name: person_step_up person_step_up_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.person_step_up
    ADD CONSTRAINT person_step_up_pkey PRIMARY KEY (person, step);


--
-- Name: person_step_up_refusal person_step_up_refusal_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.person_step_up_refusal
    ADD CONSTRAINT person_step_up_refusal_pkey PRIMARY KEY (id);


--
-- Name: person_totp_history person_totp_history_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.person_totp_history
    ADD CONSTRAINT person_totp_history_pkey PRIMARY KEY (id);


--
-- Name: person_totp person_totp_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.person_totp
    ADD CONSTRAINT person_totp_pkey PRIMARY KEY (person);


--
-- Name: person_totp person_totp_tries_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.person_totp
    ADD CONSTRAINT person_totp_tries_key UNIQUE (tries);


--
-- Name: provider_api provider_api_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.provider_api
    ADD CONSTRAINT provider_api_pkey PRIMARY KEY (provider);


--
-- Name: provider_payload provider_payload_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.provider_payload
    ADD CONSTRAINT provider_payload_pkey PRIMARY KEY (provider);


--
-- Name: recon_clock recon_clock_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.recon_clock
    ADD CONSTRAINT recon_clock_pkey PRIMARY KEY (run_id, mt5_server);


--
-- Name: recon_control recon_control_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.recon_control
    ADD CONSTRAINT recon_control_pkey PRIMARY KEY (run_id, payout_id);


--
-- Name: recon_count recon_count_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.recon_count
    ADD CONSTRAINT recon_count_pkey PRIMARY KEY (run_id, dimension, name);


--
-- Name: recon_item recon_item_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.recon_item
    ADD CONSTRAINT recon_item_pkey PRIMARY KEY (id);


--
-- Name: recon_item recon_item_run_id_kind_item_key_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.recon_item
    ADD CONSTRAINT recon_item_run_id_kind_item_key_key UNIQUE (run_id, kind, item_key);


--
-- Name: recon_matched_later recon_matched_later_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.recon_matched_later
    ADD CONSTRAINT recon_matched_later_pkey PRIMARY KEY (run_id, side, item_key);


--
-- Name: recon_paired_ahead recon_paired_ahead_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.recon_paired_ahead
    ADD CONSTRAINT recon_paired_ahead_pkey PRIMARY KEY (run_id, credit_id);


--
-- Name: recon_report recon_report_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.recon_report
    ADD CONSTRAINT recon_report_pkey PRIMARY KEY (run_id);


--
-- Name: recon_run recon_run_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.recon_run
    ADD CONSTRAINT recon_run_pkey PRIMARY KEY (id);


--
-- Name: refund_window refund_window_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.refund_window
    ADD CONSTRAINT refund_window_pkey PRIMARY KEY (provider);


--
-- Name: risk_rule_change risk_rule_change_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.risk_rule_change
    ADD CONSTRAINT risk_rule_change_pkey PRIMARY KEY (id);


--
-- Name: risk_rule risk_rule_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.risk_rule
    ADD CONSTRAINT risk_rule_pkey PRIMARY KEY (id);


--
-- Name: risk_rule risk_rule_rule_currency_provider_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.risk_rule
    ADD CONSTRAINT risk_rule_rule_currency_provider_key UNIQUE NULLS NOT DISTINCT (rule, currency, provider);


--
-- Name: schema_migration schema_migration_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5
--

ALTER TABLE ONLY mt5credit.schema_migration
    ADD CONSTRAINT schema_migration_pkey PRIMARY KEY (version);


--
-- Name: settle_verification settle_verification_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.settle_verification
    ADD CONSTRAINT settle_verification_pkey PRIMARY KEY (proposal_id);


--
-- Name: webhook_event_conflict webhook_event_conflict_event_id_body_sha256_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.webhook_event_conflict
    ADD CONSTRAINT webhook_event_conflict_event_id_body_sha256_key UNIQUE (event_id, body_sha256);


--
-- Name: webhook_event_conflict webhook_event_conflict_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.webhook_event_conflict
    ADD CONSTRAINT webhook_event_conflict_pkey PRIMARY KEY (id);


--
-- Name: webhook_event webhook_event_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.webhook_event
    ADD CONSTRAINT webhook_event_pkey PRIMARY KEY (id);


--
-- Name: webhook_event webhook_event_provider_provider_event_id_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.webhook_event
    ADD CONSTRAINT webhook_event_provider_provider_event_id_key UNIQUE (provider, provider_event_id);


--
-- Name: webhook_event_replay webhook_event_replay_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.webhook_event_replay
    ADD CONSTRAINT webhook_event_replay_pkey PRIMARY KEY (id);


--
-- Name: webhook_malformed webhook_malformed_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.webhook_malformed
    ADD CONSTRAINT webhook_malformed_pkey PRIMARY KEY (id);


--
-- Name: webhook_malformed webhook_malformed_provider_body_sha256_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.webhook_malformed
    ADD CONSTRAINT webhook_malformed_provider_body_sha256_key UNIQUE (provider, body_sha256);


--
-- Name: withdrawal withdrawal_approved_plan; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal
    ADD CONSTRAINT withdrawal_approved_plan UNIQUE (id, plan_no);


--
-- Name: withdrawal withdrawal_client_id_idempotency_key_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal
    ADD CONSTRAINT withdrawal_client_id_idempotency_key_key UNIQUE (client_id, idempotency_key);


--
-- Name: withdrawal withdrawal_debit_account; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal
    ADD CONSTRAINT withdrawal_debit_account UNIQUE (id, mt5_server, mt5_login, currency);


--
-- Name: withdrawal withdrawal_debit_terms; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal
    ADD CONSTRAINT withdrawal_debit_terms UNIQUE (id, amount_minor, status);


--
-- Name: withdrawal_leg withdrawal_leg_payout_terms; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal_leg
    ADD CONSTRAINT withdrawal_leg_payout_terms UNIQUE (withdrawal_id, plan_no, leg, kind, provider, amount_minor, currency);


--
-- Name: withdrawal_leg withdrawal_leg_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal_leg
    ADD CONSTRAINT withdrawal_leg_pkey PRIMARY KEY (withdrawal_id, plan_no, leg);


--
-- Name: withdrawal_leg withdrawal_leg_refund_terms; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal_leg
    ADD CONSTRAINT withdrawal_leg_refund_terms UNIQUE (withdrawal_id, plan_no, leg, kind, provider, credit_id, payment_key, amount_minor, currency, account_amount_minor);


--
-- Name: withdrawal withdrawal_payout_destination; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal
    ADD CONSTRAINT withdrawal_payout_destination UNIQUE (id, provider, currency, destination);


--
-- Name: withdrawal withdrawal_payout_terms; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal
    ADD CONSTRAINT withdrawal_payout_terms UNIQUE (id, provider, amount_minor, currency, destination);


--
-- Name: withdrawal withdrawal_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal
    ADD CONSTRAINT withdrawal_pkey PRIMARY KEY (id);


--
-- Name: withdrawal withdrawal_reference_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal
    ADD CONSTRAINT withdrawal_reference_key UNIQUE (reference);


--
-- Name: withdrawal_refund_history withdrawal_refund_history_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal_refund_history
    ADD CONSTRAINT withdrawal_refund_history_pkey PRIMARY KEY (id);


--
-- Name: withdrawal_refund withdrawal_refund_idempotency_key_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal_refund
    ADD CONSTRAINT withdrawal_refund_idempotency_key_key UNIQUE (idempotency_key);


--
-- Name: withdrawal_refund withdrawal_refund_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal_refund
    ADD CONSTRAINT withdrawal_refund_pkey PRIMARY KEY (id);


--
-- Name: withdrawal_refund withdrawal_refund_provider_provider_refund_id_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal_refund
    ADD CONSTRAINT withdrawal_refund_provider_provider_refund_id_key UNIQUE (provider, provider_refund_id);


--
-- Name: withdrawal_refund withdrawal_refund_reference_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal_refund
    ADD CONSTRAINT withdrawal_refund_reference_key UNIQUE (reference);


--
-- Name: withdrawal_refund_transition withdrawal_refund_transition_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal_refund_transition
    ADD CONSTRAINT withdrawal_refund_transition_pkey PRIMARY KEY (from_status, to_status);


--
-- Name: withdrawal_refund withdrawal_refund_withdrawal_id_leg_key; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal_refund
    ADD CONSTRAINT withdrawal_refund_withdrawal_id_leg_key UNIQUE (withdrawal_id, leg);


--
-- Name: withdrawal_trading_try withdrawal_trading_try_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal_trading_try
    ADD CONSTRAINT withdrawal_trading_try_pkey PRIMARY KEY (withdrawal_id);


--
-- Name: withdrawal_transition withdrawal_transition_pkey; Type: CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal_transition
    ADD CONSTRAINT withdrawal_transition_pkey PRIMARY KEY (from_status, to_status);


--
-- Name: backfill_request_open_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX backfill_request_open_idx ON mt5credit.backfill_request USING btree (provider) WHERE (finished_at IS NULL);


--
-- Name: case_action_case_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX case_action_case_idx ON mt5credit.case_action USING btree (case_id, id);


--
-- Name: case_open_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX case_open_idx ON mt5credit."case" USING btree (status, kind) WHERE (status <> 'resolved'::text);


--
-- Name: credit_history_credit_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX credit_history_credit_idx ON mt5credit.credit_history USING btree (credit_id, id);


--
-- Name: deposit_client_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX deposit_client_idx ON mt5credit.deposit USING btree (client_id, created_at);


--
-- Name: deposit_conflict_deposit_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX deposit_conflict_deposit_idx ON mt5credit.deposit_conflict USING btree (deposit_id);


--
-- Name: deposit_history_deposit_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX deposit_history_deposit_idx ON mt5credit.deposit_history USING btree (deposit_id, id);


--
-- Name: journal_xid_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX journal_xid_idx ON mt5credit.journal USING btree (xid);


--
-- Name: money_proposal_one_open; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE UNIQUE INDEX money_proposal_one_open ON mt5credit.money_proposal USING btree (case_id) WHERE (status = 'proposed'::text);


--
-- Name: mt5_credit_created_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX mt5_credit_created_idx ON mt5credit.mt5_credit USING btree (created_at);


--
-- Name: mt5_credit_instrument_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX mt5_credit_instrument_idx ON mt5credit.mt5_credit USING btree (instrument) WHERE (instrument IS NOT NULL);


--
-- Name: mt5_credit_login_deposits_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX mt5_credit_login_deposits_idx ON mt5credit.mt5_credit USING btree (mt5_server, mt5_login, created_at) WHERE (kind = 'deposit'::text);


--
-- Name: mt5_credit_one_per_deposit; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE UNIQUE INDEX mt5_credit_one_per_deposit ON mt5credit.mt5_credit USING btree (deposit_id) WHERE (kind = 'deposit'::text);


--
-- Name: mt5_credit_one_per_withdrawal; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE UNIQUE INDEX mt5_credit_one_per_withdrawal ON mt5credit.mt5_credit USING btree (withdrawal_id) WHERE (kind = 'withdrawal'::text);


--
-- Name: mt5_credit_open_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX mt5_credit_open_idx ON mt5credit.mt5_credit USING btree (status, id) WHERE (status = ANY (ARRAY['claimed'::text, 'unknown'::text]));


--
-- Name: mt5_credit_original_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX mt5_credit_original_idx ON mt5credit.mt5_credit USING btree (original_credit_id) WHERE (original_credit_id IS NOT NULL);


--
-- Name: mt5_credit_pending_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX mt5_credit_pending_idx ON mt5credit.mt5_credit USING btree (id) WHERE (status = 'pending'::text);


--
-- Name: outbound_attempt_delivery; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX outbound_attempt_delivery ON mt5credit.outbound_attempt USING btree (message_id, endpoint);


--
-- Name: outbound_delivery_due; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX outbound_delivery_due ON mt5credit.outbound_delivery USING btree (endpoint, next_at) WHERE (status = 'pending'::text);


--
-- Name: outbound_delivery_open; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX outbound_delivery_open ON mt5credit.outbound_delivery USING btree (endpoint, status) WHERE (status <> 'delivered'::text);


--
-- Name: outbound_delivery_sending; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX outbound_delivery_sending ON mt5credit.outbound_delivery USING btree (lease_expires_at) WHERE (status = 'sending'::text);


--
-- Name: pause_one_active; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE UNIQUE INDEX pause_one_active ON mt5credit.pause USING btree (scope, target) WHERE (resumed_at IS NULL);


--
-- Name: payout_history_payout_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX payout_history_payout_idx ON mt5credit.payout_history USING btree (payout_id, id);


--
-- Name: payout_open_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX payout_open_idx ON mt5credit.payout USING btree (status, id) WHERE (status = ANY (ARRAY['pending'::text, 'sending'::text, 'unknown'::text, 'accepted'::text]));


--
-- Name: payout_watched_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX payout_watched_idx ON mt5credit.payout USING btree (next_check_at) WHERE ((status = 'paid'::text) AND (watch_until IS NOT NULL));


--
-- Name: recon_clock_server_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX recon_clock_server_idx ON mt5credit.recon_clock USING btree (mt5_server, measured_at);


--
-- Name: recon_deal_run_brin; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX recon_deal_run_brin ON mt5credit.recon_deal USING brin (run_id);


--
-- Name: recon_item_case_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX recon_item_case_idx ON mt5credit.recon_item USING btree (case_id);


--
-- Name: recon_paired_ahead_credit_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX recon_paired_ahead_credit_idx ON mt5credit.recon_paired_ahead USING btree (credit_id);


--
-- Name: recon_run_day_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX recon_run_day_idx ON mt5credit.recon_run USING btree (provider, business_day, currency, id);


--
-- Name: recon_settlement_run_brin; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX recon_settlement_run_brin ON mt5credit.recon_settlement USING brin (run_id);


--
-- Name: recon_transit_credit_run_brin; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX recon_transit_credit_run_brin ON mt5credit.recon_transit_credit USING brin (run_id);


--
-- Name: recon_transit_settlement_run_brin; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX recon_transit_settlement_run_brin ON mt5credit.recon_transit_settlement USING brin (run_id);


--
-- Name: webhook_event_received_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX webhook_event_received_idx ON mt5credit.webhook_event USING btree (received_at);


--
-- Name: webhook_event_replay_event_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX webhook_event_replay_event_idx ON mt5credit.webhook_event_replay USING btree (event_id);


--
-- Name: webhook_event_request_id_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX webhook_event_request_id_idx ON mt5credit.webhook_event USING btree (request_id) WHERE (request_id IS NOT NULL);


--
-- Name: withdrawal_leg_credit_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX withdrawal_leg_credit_idx ON mt5credit.withdrawal_leg USING btree (credit_id) WHERE (credit_id IS NOT NULL);


--
-- Name: withdrawal_open_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX withdrawal_open_idx ON mt5credit.withdrawal USING btree (status, id) WHERE (status = ANY (ARRAY['requested'::text, 'prepared'::text, 'approved'::text]));


--
-- Name: withdrawal_refund_credit_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX withdrawal_refund_credit_idx ON mt5credit.withdrawal_refund USING btree (credit_id);


--
-- Name: withdrawal_refund_history_refund_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX withdrawal_refund_history_refund_idx ON mt5credit.withdrawal_refund_history USING btree (refund_id, id);


--
-- Name: withdrawal_refund_open_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX withdrawal_refund_open_idx ON mt5credit.withdrawal_refund USING btree (status, id) WHERE (status = ANY (ARRAY['pending'::text, 'sending'::text, 'unknown'::text, 'accepted'::text]));


--
-- Name: withdrawal_refund_provider_id_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX withdrawal_refund_provider_id_idx ON mt5credit.withdrawal_refund USING btree (provider_refund_id) WHERE (provider_refund_id IS NOT NULL);


--
-- Name: withdrawal_refund_watched_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX withdrawal_refund_watched_idx ON mt5credit.withdrawal_refund USING btree (next_check_at) WHERE ((status = 'succeeded'::text) AND (next_check_at IS NOT NULL));


--
-- Name: withdrawal_trading_try_last_idx; Type: INDEX; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE INDEX withdrawal_trading_try_last_idx ON mt5credit.withdrawal_trading_try USING btree (last_at);


--
-- Name: backfill_request backfill_request_guard; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER backfill_request_guard BEFORE UPDATE ON mt5credit.backfill_request FOR EACH ROW EXECUTE FUNCTION mt5credit.backfill_request_guard();


--
-- Name: backfill_request backfill_request_no_delete; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER backfill_request_no_delete BEFORE DELETE ON mt5credit.backfill_request FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: case_action case_action_append_only; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER case_action_append_only BEFORE DELETE OR UPDATE ON mt5credit.case_action FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: case_action case_action_journal; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER case_action_journal AFTER INSERT ON mt5credit.case_action FOR EACH ROW EXECUTE FUNCTION mt5credit.journal_record('case_id', 'case');


--
-- Name: case case_hold_decided_first; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER case_hold_decided_first BEFORE UPDATE OF status ON mt5credit."case" FOR EACH ROW WHEN (((new.status = 'resolved'::text) AND (old.status <> 'resolved'::text) AND (new.kind = ANY (ARRAY['risk_hold'::text, 'withdrawal_hold'::text])))) EXECUTE FUNCTION mt5credit.hold_case_guard();


--
-- Name: case case_lifecycle; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER case_lifecycle BEFORE UPDATE ON mt5credit."case" FOR EACH ROW EXECUTE FUNCTION mt5credit.case_guard();


--
-- Name: case case_no_delete; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER case_no_delete BEFORE DELETE ON mt5credit."case" FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: case case_outbound; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER case_outbound AFTER INSERT ON mt5credit."case" FOR EACH ROW WHEN ((new.kind <> 'withdrawal_hold'::text)) EXECUTE FUNCTION mt5credit.outbound_on_case();


--
-- Name: client_name client_name_journal; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER client_name_journal AFTER INSERT OR UPDATE ON mt5credit.client_name FOR EACH ROW EXECUTE FUNCTION mt5credit.journal_record('id', 'client_name');


--
-- Name: client_name client_name_no_delete; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER client_name_no_delete BEFORE DELETE ON mt5credit.client_name FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: client_name client_name_no_truncate; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER client_name_no_truncate BEFORE TRUNCATE ON mt5credit.client_name FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: mt5_credit credit_done_closes_no_answer; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER credit_done_closes_no_answer AFTER UPDATE OF status ON mt5credit.mt5_credit FOR EACH ROW WHEN (((new.status = 'done'::text) AND (old.status IS DISTINCT FROM 'done'::text))) EXECUTE FUNCTION mt5credit.credit_done_closes_no_answer();


--
-- Name: mt5_credit credit_done_counts_latency; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER credit_done_counts_latency AFTER UPDATE OF status ON mt5credit.mt5_credit FOR EACH ROW WHEN (((new.status = 'done'::text) AND (old.status IS DISTINCT FROM 'done'::text))) EXECUTE FUNCTION mt5credit.credit_latency_count();


--
-- Name: credit_history credit_history_append_only; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER credit_history_append_only BEFORE DELETE OR UPDATE ON mt5credit.credit_history FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: credit_history credit_history_journal; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER credit_history_journal AFTER INSERT ON mt5credit.credit_history FOR EACH ROW WHEN ((COALESCE(current_setting('mt5credit.actors'::text, true), ''::text) = ''::text)) EXECUTE FUNCTION mt5credit.journal_record('credit_id', 'credit', 'locked', '-');


--
-- Name: credit_history credit_history_no_truncate; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER credit_history_no_truncate BEFORE TRUNCATE ON mt5credit.credit_history FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: database_rewind database_rewind_append_only; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER database_rewind_append_only BEFORE DELETE OR UPDATE ON mt5credit.database_rewind FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: database_timeline database_timeline_append_only; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER database_timeline_append_only BEFORE DELETE OR UPDATE ON mt5credit.database_timeline FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: deployment deployment_fixed; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER deployment_fixed BEFORE DELETE OR UPDATE OR TRUNCATE ON mt5credit.deployment FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: deposit_conflict deposit_conflict_append_only; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER deposit_conflict_append_only BEFORE DELETE OR UPDATE OR TRUNCATE ON mt5credit.deposit_conflict FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: deposit deposit_guard_and_log; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER deposit_guard_and_log BEFORE UPDATE ON mt5credit.deposit FOR EACH ROW EXECUTE FUNCTION mt5credit.deposit_guard_and_log();


--
-- Name: deposit_history deposit_history_append_only; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER deposit_history_append_only BEFORE DELETE OR UPDATE OR TRUNCATE ON mt5credit.deposit_history FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: deposit_history deposit_history_journal; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER deposit_history_journal AFTER INSERT ON mt5credit.deposit_history FOR EACH ROW WHEN ((COALESCE(current_setting('mt5credit.actors'::text, true), ''::text) = ''::text)) EXECUTE FUNCTION mt5credit.journal_record('deposit_id', 'deposit', 'locked', 'created');


--
-- Name: deposit_history deposit_history_outbound; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER deposit_history_outbound AFTER INSERT ON mt5credit.deposit_history FOR EACH ROW WHEN ((new.to_status = 'failed'::text)) EXECUTE FUNCTION mt5credit.outbound_on_deposit();


--
-- Name: deposit deposit_no_delete; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER deposit_no_delete BEFORE DELETE ON mt5credit.deposit FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: journal journal_no_truncate; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER journal_no_truncate BEFORE TRUNCATE ON mt5credit.journal FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: journal journal_no_update; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER journal_no_update BEFORE DELETE OR UPDATE ON mt5credit.journal FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: money_proposal money_proposal_fixed; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER money_proposal_fixed BEFORE UPDATE ON mt5credit.money_proposal FOR EACH ROW EXECUTE FUNCTION mt5credit.money_proposal_guard();


--
-- Name: money_proposal money_proposal_journal; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER money_proposal_journal AFTER INSERT OR UPDATE ON mt5credit.money_proposal FOR EACH ROW EXECUTE FUNCTION mt5credit.journal_record('id', 'proposal');


--
-- Name: money_proposal money_proposal_no_delete; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER money_proposal_no_delete BEFORE DELETE ON mt5credit.money_proposal FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: mt5_credit mt5_credit_deployment; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER mt5_credit_deployment BEFORE INSERT OR UPDATE OF deployment_tag ON mt5credit.mt5_credit FOR EACH ROW EXECUTE FUNCTION mt5credit.deployment_stamp();


--
-- Name: mt5_credit mt5_credit_guard_and_log; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER mt5_credit_guard_and_log BEFORE UPDATE ON mt5credit.mt5_credit FOR EACH ROW EXECUTE FUNCTION mt5credit.credit_guard_and_log();


--
-- Name: mt5_credit mt5_credit_held_for_fixed; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER mt5_credit_held_for_fixed BEFORE UPDATE OF held_for ON mt5credit.mt5_credit FOR EACH ROW WHEN ((old.held_for IS DISTINCT FROM new.held_for)) EXECUTE FUNCTION mt5credit.credit_held_for_fixed();


--
-- Name: mt5_credit mt5_credit_inherit_withdrawal; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER mt5_credit_inherit_withdrawal BEFORE INSERT ON mt5credit.mt5_credit FOR EACH ROW WHEN (((new.kind = 'correction'::text) AND (new.deposit_id IS NULL) AND (new.withdrawal_id IS NULL))) EXECUTE FUNCTION mt5credit.credit_inherit_withdrawal();


--
-- Name: mt5_credit mt5_credit_journal; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER mt5_credit_journal AFTER INSERT ON mt5credit.mt5_credit REFERENCING NEW TABLE AS new_credits FOR EACH STATEMENT WHEN ((COALESCE(current_setting('mt5credit.actors'::text, true), ''::text) <> ''::text)) EXECUTE FUNCTION mt5credit.journal_record_ingest();


--
-- Name: mt5_credit mt5_credit_log_insert; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER mt5_credit_log_insert AFTER INSERT ON mt5credit.mt5_credit FOR EACH ROW EXECUTE FUNCTION mt5credit.credit_guard_and_log();


--
-- Name: mt5_credit mt5_credit_no_delete; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER mt5_credit_no_delete BEFORE DELETE ON mt5credit.mt5_credit FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: mt5_credit mt5_credit_no_truncate; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER mt5_credit_no_truncate BEFORE TRUNCATE ON mt5credit.mt5_credit FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: mt5_credit mt5_credit_on_hold; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER mt5_credit_on_hold AFTER INSERT ON mt5credit.mt5_credit FOR EACH ROW WHEN ((new.held_for IS NOT NULL)) EXECUTE FUNCTION mt5credit.credit_on_hold();


--
-- Name: mt5_credit mt5_credit_outbound; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER mt5_credit_outbound AFTER UPDATE OF status ON mt5credit.mt5_credit FOR EACH ROW WHEN (((old.status IS DISTINCT FROM new.status) AND (new.status = ANY (ARRAY['done'::text, 'failed'::text, 'held'::text])))) EXECUTE FUNCTION mt5credit.outbound_on_credit();


--
-- Name: mt5_credit mt5_credit_outbound_born; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER mt5_credit_outbound_born AFTER INSERT ON mt5credit.mt5_credit FOR EACH ROW WHEN ((new.status = ANY (ARRAY['done'::text, 'failed'::text, 'held'::text]))) EXECUTE FUNCTION mt5credit.outbound_on_credit();


--
-- Name: mt5_credit mt5_credit_payment_after_rewind; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER mt5_credit_payment_after_rewind AFTER INSERT ON mt5credit.mt5_credit FOR EACH ROW WHEN ((new.kind <> ALL (ARRAY['withdrawal'::text, 'correction'::text]))) EXECUTE FUNCTION mt5credit.payment_credit_after_rewind();


--
-- Name: mt5_credit mt5_credit_payout_after_debit; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER mt5_credit_payout_after_debit AFTER UPDATE OF status ON mt5credit.mt5_credit FOR EACH ROW WHEN (((new.kind = 'withdrawal'::text) AND (new.status = 'done'::text) AND (old.status <> 'done'::text))) EXECUTE FUNCTION mt5credit.payout_after_debit();


--
-- Name: mt5_credit mt5_credit_risk_check; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER mt5_credit_risk_check BEFORE INSERT ON mt5credit.mt5_credit FOR EACH ROW WHEN ((new.kind = 'deposit'::text)) EXECUTE FUNCTION mt5credit.risk_check();


--
-- Name: mt5_credit mt5_credit_risk_facts_fixed; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER mt5_credit_risk_facts_fixed BEFORE UPDATE OF payer_name, instrument, provider_signal, payer_name_erased_at ON mt5credit.mt5_credit FOR EACH ROW WHEN (((((old.payer_name IS DISTINCT FROM new.payer_name) OR (old.instrument IS DISTINCT FROM new.instrument)) OR (old.provider_signal IS DISTINCT FROM new.provider_signal)) OR (old.payer_name_erased_at IS DISTINCT FROM new.payer_name_erased_at))) EXECUTE FUNCTION mt5credit.credit_risk_facts_fixed();


--
-- Name: mt5_credit mt5_credit_withdrawal_after_rewind; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER mt5_credit_withdrawal_after_rewind AFTER INSERT ON mt5credit.mt5_credit FOR EACH ROW WHEN ((new.kind = 'withdrawal'::text)) EXECUTE FUNCTION mt5credit.withdrawal_debit_after_rewind();


--
-- Name: mt5_credit mt5_credit_withdrawal_fixed; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER mt5_credit_withdrawal_fixed BEFORE UPDATE OF withdrawal_id ON mt5credit.mt5_credit FOR EACH ROW EXECUTE FUNCTION mt5credit.credit_withdrawal_fixed();


--
-- Name: outbound_attempt outbound_attempt_append_only; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER outbound_attempt_append_only BEFORE DELETE OR UPDATE ON mt5credit.outbound_attempt FOR EACH ROW EXECUTE FUNCTION mt5credit.outbound_append_only();


--
-- Name: outbound_attempt outbound_attempt_no_truncate; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER outbound_attempt_no_truncate BEFORE TRUNCATE ON mt5credit.outbound_attempt FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.outbound_append_only();


--
-- Name: outbound_message outbound_message_fixed; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER outbound_message_fixed BEFORE DELETE OR UPDATE ON mt5credit.outbound_message FOR EACH ROW EXECUTE FUNCTION mt5credit.outbound_message_fixed();


--
-- Name: outbound_replay outbound_replay_append_only; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER outbound_replay_append_only BEFORE DELETE OR UPDATE ON mt5credit.outbound_replay FOR EACH ROW EXECUTE FUNCTION mt5credit.outbound_append_only();


--
-- Name: outbound_replay outbound_replay_no_truncate; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER outbound_replay_no_truncate BEFORE TRUNCATE ON mt5credit.outbound_replay FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.outbound_append_only();


--
-- Name: pause pause_guard; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER pause_guard BEFORE DELETE OR UPDATE ON mt5credit.pause FOR EACH ROW EXECUTE FUNCTION mt5credit.pause_guard();


--
-- Name: payload_format payload_format_fixed; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER payload_format_fixed BEFORE DELETE OR UPDATE ON mt5credit.payload_format FOR EACH ROW EXECUTE FUNCTION mt5credit.payload_format_guard();


--
-- Name: payload_rule payload_rule_fixed; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER payload_rule_fixed BEFORE DELETE OR UPDATE ON mt5credit.payload_rule FOR EACH ROW EXECUTE FUNCTION mt5credit.payload_rule_guard();


--
-- Name: payout payout_deployment; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER payout_deployment BEFORE INSERT OR UPDATE OF deployment_tag ON mt5credit.payout FOR EACH ROW EXECUTE FUNCTION mt5credit.deployment_stamp();


--
-- Name: payout payout_guard_and_log; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER payout_guard_and_log BEFORE UPDATE ON mt5credit.payout FOR EACH ROW EXECUTE FUNCTION mt5credit.payout_guard_and_log();


--
-- Name: payout_history payout_history_append_only; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER payout_history_append_only BEFORE DELETE OR UPDATE ON mt5credit.payout_history FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: payout_history payout_history_journal; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER payout_history_journal AFTER INSERT ON mt5credit.payout_history FOR EACH ROW EXECUTE FUNCTION mt5credit.journal_record('payout_id', 'payout');


--
-- Name: payout payout_log_insert; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER payout_log_insert AFTER INSERT ON mt5credit.payout FOR EACH ROW EXECUTE FUNCTION mt5credit.payout_guard_and_log();


--
-- Name: payout payout_no_delete; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER payout_no_delete BEFORE DELETE ON mt5credit.payout FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: payout payout_outbound; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER payout_outbound AFTER UPDATE OF status ON mt5credit.payout FOR EACH ROW WHEN (((old.status IS DISTINCT FROM new.status) AND (new.status = ANY (ARRAY['paid'::text, 'rejected'::text])))) EXECUTE FUNCTION mt5credit.outbound_on_leg();


--
-- Name: payout payout_whole_without_plan; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER payout_whole_without_plan BEFORE INSERT ON mt5credit.payout FOR EACH ROW EXECUTE FUNCTION mt5credit.payout_whole_without_plan();


--
-- Name: provider_payload provider_payload_before_events; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER provider_payload_before_events BEFORE INSERT ON mt5credit.provider_payload FOR EACH ROW EXECUTE FUNCTION mt5credit.provider_payload_new();


--
-- Name: provider_payload provider_payload_fixed; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER provider_payload_fixed BEFORE DELETE OR UPDATE ON mt5credit.provider_payload FOR EACH ROW EXECUTE FUNCTION mt5credit.provider_payload_guard();


--
-- Name: recon_clock recon_clock_append_only; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER recon_clock_append_only BEFORE DELETE OR UPDATE OR TRUNCATE ON mt5credit.recon_clock FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: recon_deal recon_deal_append_only; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER recon_deal_append_only BEFORE DELETE OR UPDATE OR TRUNCATE ON mt5credit.recon_deal FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: recon_item recon_item_append_only; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER recon_item_append_only BEFORE DELETE OR UPDATE ON mt5credit.recon_item FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: recon_matched_later recon_matched_later_append_only; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER recon_matched_later_append_only BEFORE DELETE OR UPDATE OR TRUNCATE ON mt5credit.recon_matched_later FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: recon_paired_ahead recon_paired_ahead_append_only; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER recon_paired_ahead_append_only BEFORE DELETE OR UPDATE OR TRUNCATE ON mt5credit.recon_paired_ahead FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: recon_report recon_report_append_only; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER recon_report_append_only BEFORE DELETE OR UPDATE ON mt5credit.recon_report FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: recon_run recon_run_finished_is_final; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER recon_run_finished_is_final BEFORE UPDATE ON mt5credit.recon_run FOR EACH ROW EXECUTE FUNCTION mt5credit.recon_run_guard();


--
-- Name: recon_run recon_run_no_delete; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER recon_run_no_delete BEFORE DELETE ON mt5credit.recon_run FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: recon_run recon_run_stamp_finish; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER recon_run_stamp_finish BEFORE UPDATE ON mt5credit.recon_run FOR EACH ROW EXECUTE FUNCTION mt5credit.recon_run_finish_clock();


--
-- Name: recon_settlement recon_settlement_append_only; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER recon_settlement_append_only BEFORE DELETE OR UPDATE OR TRUNCATE ON mt5credit.recon_settlement FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: recon_transit_credit recon_transit_credit_append_only; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER recon_transit_credit_append_only BEFORE DELETE OR UPDATE OR TRUNCATE ON mt5credit.recon_transit_credit FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: recon_transit_settlement recon_transit_settlement_append_only; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER recon_transit_settlement_append_only BEFORE DELETE OR UPDATE OR TRUNCATE ON mt5credit.recon_transit_settlement FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: mt5_credit reversal_check_failed; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER reversal_check_failed AFTER UPDATE OF status ON mt5credit.mt5_credit FOR EACH ROW WHEN (((new.status = 'failed'::text) AND (old.status <> 'failed'::text))) EXECUTE FUNCTION mt5credit.reversal_check();


--
-- Name: mt5_credit reversal_check_insert; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER reversal_check_insert AFTER INSERT ON mt5credit.mt5_credit FOR EACH ROW WHEN (((new.original_credit_id IS NOT NULL) AND (new.kind = ANY (ARRAY['refund'::text, 'chargeback'::text])))) EXECUTE FUNCTION mt5credit.reversal_check();


--
-- Name: risk_rule_change risk_rule_change_guard; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER risk_rule_change_guard BEFORE UPDATE ON mt5credit.risk_rule_change FOR EACH ROW EXECUTE FUNCTION mt5credit.risk_rule_change_guard();


--
-- Name: risk_rule_change risk_rule_change_journal; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER risk_rule_change_journal AFTER INSERT OR UPDATE ON mt5credit.risk_rule_change FOR EACH ROW EXECUTE FUNCTION mt5credit.journal_record('id', 'rule_change');


--
-- Name: risk_rule_change risk_rule_change_no_delete; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER risk_rule_change_no_delete BEFORE DELETE ON mt5credit.risk_rule_change FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: risk_rule_change risk_rule_change_no_truncate; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER risk_rule_change_no_truncate BEFORE TRUNCATE ON mt5credit.risk_rule_change FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: settle_verification settle_verification_append_only; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER settle_verification_append_only BEFORE DELETE OR UPDATE ON mt5credit.settle_verification FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: webhook_event webhook_event_append_only; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER webhook_event_append_only BEFORE DELETE ON mt5credit.webhook_event FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: webhook_event_conflict webhook_event_conflict_guard; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER webhook_event_conflict_guard BEFORE DELETE OR UPDATE ON mt5credit.webhook_event_conflict FOR EACH ROW EXECUTE FUNCTION mt5credit.webhook_event_conflict_guard();


--
-- Name: webhook_event webhook_event_immutable; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER webhook_event_immutable BEFORE UPDATE ON mt5credit.webhook_event FOR EACH ROW EXECUTE FUNCTION mt5credit.webhook_event_guard();


--
-- Name: webhook_event webhook_event_journal; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER webhook_event_journal AFTER INSERT ON mt5credit.webhook_event REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.journal_record_events();


--
-- Name: webhook_event webhook_event_journal_update; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER webhook_event_journal_update AFTER UPDATE ON mt5credit.webhook_event FOR EACH ROW EXECUTE FUNCTION mt5credit.journal_record('id', 'event');


--
-- Name: webhook_event_replay webhook_event_replay_append_only; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER webhook_event_replay_append_only BEFORE DELETE OR UPDATE ON mt5credit.webhook_event_replay FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: webhook_malformed webhook_malformed_guard; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER webhook_malformed_guard BEFORE UPDATE ON mt5credit.webhook_malformed FOR EACH ROW EXECUTE FUNCTION mt5credit.webhook_malformed_guard();


--
-- Name: webhook_malformed webhook_malformed_no_delete; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER webhook_malformed_no_delete BEFORE DELETE ON mt5credit.webhook_malformed FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: withdrawal withdrawal_enqueue_debit; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER withdrawal_enqueue_debit AFTER UPDATE OF status ON mt5credit.withdrawal FOR EACH ROW WHEN (((new.status = 'approved'::text) AND (old.status <> 'approved'::text))) EXECUTE FUNCTION mt5credit.withdrawal_enqueue_debit();


--
-- Name: withdrawal withdrawal_guard; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER withdrawal_guard BEFORE UPDATE ON mt5credit.withdrawal FOR EACH ROW EXECUTE FUNCTION mt5credit.withdrawal_guard();


--
-- Name: withdrawal withdrawal_held_for_grows; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER withdrawal_held_for_grows BEFORE UPDATE OF held_for, trading, trading_after ON mt5credit.withdrawal FOR EACH ROW EXECUTE FUNCTION mt5credit.withdrawal_held_for_grows();


--
-- Name: withdrawal withdrawal_journal; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER withdrawal_journal AFTER INSERT OR UPDATE ON mt5credit.withdrawal FOR EACH ROW EXECUTE FUNCTION mt5credit.journal_record('id', 'withdrawal');


--
-- Name: withdrawal_leg withdrawal_leg_append_only; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER withdrawal_leg_append_only BEFORE DELETE OR UPDATE OR TRUNCATE ON mt5credit.withdrawal_leg FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: withdrawal withdrawal_no_delete; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER withdrawal_no_delete BEFORE DELETE ON mt5credit.withdrawal FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: withdrawal withdrawal_on_hold; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER withdrawal_on_hold AFTER INSERT ON mt5credit.withdrawal FOR EACH ROW WHEN ((new.status = 'held'::text)) EXECUTE FUNCTION mt5credit.withdrawal_on_hold();


--
-- Name: withdrawal withdrawal_on_hold_again; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER withdrawal_on_hold_again AFTER UPDATE ON mt5credit.withdrawal FOR EACH ROW WHEN (((new.status = 'held'::text) AND (jsonb_array_length(new.held_for) > COALESCE(jsonb_array_length(old.held_for), 0)))) EXECUTE FUNCTION mt5credit.withdrawal_on_hold();


--
-- Name: withdrawal withdrawal_outbound; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER withdrawal_outbound AFTER UPDATE OF status ON mt5credit.withdrawal FOR EACH ROW WHEN (((old.status IS DISTINCT FROM new.status) AND (new.status = ANY (ARRAY['approved'::text, 'rejected'::text, 'cancelled'::text])))) EXECUTE FUNCTION mt5credit.outbound_on_withdrawal();


--
-- Name: withdrawal withdrawal_payable; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER withdrawal_payable BEFORE INSERT OR UPDATE OF status, provider, currency ON mt5credit.withdrawal FOR EACH ROW WHEN ((new.status = ANY (ARRAY['requested'::text, 'prepared'::text, 'approved'::text]))) EXECUTE FUNCTION mt5credit.withdrawal_payable();


--
-- Name: withdrawal withdrawal_plan_guard; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER withdrawal_plan_guard BEFORE UPDATE ON mt5credit.withdrawal FOR EACH ROW EXECUTE FUNCTION mt5credit.withdrawal_plan_guard();


--
-- Name: withdrawal_refund withdrawal_refund_deployment; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER withdrawal_refund_deployment BEFORE INSERT OR UPDATE OF deployment_tag ON mt5credit.withdrawal_refund FOR EACH ROW EXECUTE FUNCTION mt5credit.deployment_stamp();


--
-- Name: withdrawal_refund withdrawal_refund_guard_and_log; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER withdrawal_refund_guard_and_log BEFORE UPDATE ON mt5credit.withdrawal_refund FOR EACH ROW EXECUTE FUNCTION mt5credit.withdrawal_refund_guard_and_log();


--
-- Name: withdrawal_refund_history withdrawal_refund_history_append_only; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER withdrawal_refund_history_append_only BEFORE DELETE OR UPDATE ON mt5credit.withdrawal_refund_history FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: withdrawal_refund_history withdrawal_refund_history_journal; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER withdrawal_refund_history_journal AFTER INSERT ON mt5credit.withdrawal_refund_history FOR EACH ROW EXECUTE FUNCTION mt5credit.journal_record('refund_id', 'refund');


--
-- Name: withdrawal_refund withdrawal_refund_log_insert; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER withdrawal_refund_log_insert AFTER INSERT ON mt5credit.withdrawal_refund FOR EACH ROW EXECUTE FUNCTION mt5credit.withdrawal_refund_guard_and_log();


--
-- Name: withdrawal_refund withdrawal_refund_no_delete; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER withdrawal_refund_no_delete BEFORE DELETE ON mt5credit.withdrawal_refund FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


--
-- Name: withdrawal_refund withdrawal_refund_outbound; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER withdrawal_refund_outbound AFTER UPDATE OF status ON mt5credit.withdrawal_refund FOR EACH ROW WHEN (((old.status IS DISTINCT FROM new.status) AND (new.status = ANY (ARRAY['succeeded'::text, 'failed'::text])))) EXECUTE FUNCTION mt5credit.outbound_on_leg();


--
-- Name: withdrawal withdrawal_risk_check; Type: TRIGGER; Schema: mt5credit; Owner: mt5credit_owner
--

CREATE TRIGGER withdrawal_risk_check BEFORE INSERT OR UPDATE ON mt5credit.withdrawal FOR EACH ROW EXECUTE FUNCTION mt5credit.withdrawal_risk_check();


--
-- Name: case_action case_action_case_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.case_action
    ADD CONSTRAINT case_action_case_id_fkey FOREIGN KEY (case_id) REFERENCES mt5credit."case"(id);


--
-- Name: case case_credit_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit."case"
    ADD CONSTRAINT case_credit_id_fkey FOREIGN KEY (credit_id) REFERENCES mt5credit.mt5_credit(id);


--
-- Name: case case_currency_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit."case"
    ADD CONSTRAINT case_currency_fkey FOREIGN KEY (currency) REFERENCES mt5credit.currency(code);


--
-- Name: case case_deposit_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit."case"
    ADD CONSTRAINT case_deposit_id_fkey FOREIGN KEY (deposit_id) REFERENCES mt5credit.deposit(id);


--
-- Name: case case_webhook_event_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit."case"
    ADD CONSTRAINT case_webhook_event_id_fkey FOREIGN KEY (webhook_event_id) REFERENCES mt5credit.webhook_event(id);


--
-- Name: client_account client_account_currency_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.client_account
    ADD CONSTRAINT client_account_currency_fkey FOREIGN KEY (currency) REFERENCES mt5credit.currency(code);


--
-- Name: credit_history credit_history_credit_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.credit_history
    ADD CONSTRAINT credit_history_credit_id_fkey FOREIGN KEY (credit_id) REFERENCES mt5credit.mt5_credit(id);


--
-- Name: database_timeline database_timeline_rewind_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.database_timeline
    ADD CONSTRAINT database_timeline_rewind_id_fkey FOREIGN KEY (rewind_id) REFERENCES mt5credit.database_rewind(id);


--
-- Name: deposit deposit_account_currency_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.deposit
    ADD CONSTRAINT deposit_account_currency_fkey FOREIGN KEY (account_currency) REFERENCES mt5credit.currency(code);


--
-- Name: deposit_conflict deposit_conflict_case_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.deposit_conflict
    ADD CONSTRAINT deposit_conflict_case_id_fkey FOREIGN KEY (case_id) REFERENCES mt5credit."case"(id);


--
-- Name: deposit_conflict deposit_conflict_deposit_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.deposit_conflict
    ADD CONSTRAINT deposit_conflict_deposit_id_fkey FOREIGN KEY (deposit_id) REFERENCES mt5credit.deposit(id);


--
-- Name: deposit deposit_currency_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.deposit
    ADD CONSTRAINT deposit_currency_fkey FOREIGN KEY (currency) REFERENCES mt5credit.currency(code);


--
-- Name: deposit_history deposit_history_deposit_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.deposit_history
    ADD CONSTRAINT deposit_history_deposit_id_fkey FOREIGN KEY (deposit_id) REFERENCES mt5credit.deposit(id);


--
-- Name: deposit_history deposit_history_from_status_to_status_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.deposit_history
    ADD CONSTRAINT deposit_history_from_status_to_status_fkey FOREIGN KEY (from_status, to_status) REFERENCES mt5credit.deposit_transition(from_status, to_status);


--
-- Name: deposit deposit_mt5_server_mt5_login_client_id_account_currency_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.deposit
    ADD CONSTRAINT deposit_mt5_server_mt5_login_client_id_account_currency_fkey FOREIGN KEY (mt5_server, mt5_login, client_id, account_currency) REFERENCES mt5credit.client_account(mt5_server, mt5_login, client_id, currency);


--
-- Name: money_proposal money_proposal_case_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.money_proposal
    ADD CONSTRAINT money_proposal_case_id_fkey FOREIGN KEY (case_id) REFERENCES mt5credit."case"(id);


--
-- Name: money_proposal money_proposal_credit_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.money_proposal
    ADD CONSTRAINT money_proposal_credit_id_fkey FOREIGN KEY (credit_id) REFERENCES mt5credit.mt5_credit(id);


--
-- Name: money_proposal money_proposal_currency_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.money_proposal
    ADD CONSTRAINT money_proposal_currency_fkey FOREIGN KEY (currency) REFERENCES mt5credit.currency(code);


--
-- Name: money_proposal money_proposal_result_credit_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.money_proposal
    ADD CONSTRAINT money_proposal_result_credit_id_fkey FOREIGN KEY (result_credit_id) REFERENCES mt5credit.mt5_credit(id);


--
-- Name: money_proposal money_proposal_withdrawal_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.money_proposal
    ADD CONSTRAINT money_proposal_withdrawal_id_fkey FOREIGN KEY (withdrawal_id) REFERENCES mt5credit.withdrawal(id);


--
-- Name: mt5_credit mt5_credit_currency_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.mt5_credit
    ADD CONSTRAINT mt5_credit_currency_fkey FOREIGN KEY (currency) REFERENCES mt5credit.currency(code);


--
-- Name: mt5_credit mt5_credit_deposit_id_mt5_server_mt5_login_currency_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.mt5_credit
    ADD CONSTRAINT mt5_credit_deposit_id_mt5_server_mt5_login_currency_fkey FOREIGN KEY (deposit_id, mt5_server, mt5_login, currency) REFERENCES mt5credit.deposit(id, mt5_server, mt5_login, account_currency);


--
-- Name: mt5_credit mt5_credit_original_credit_id_deposit_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.mt5_credit
    ADD CONSTRAINT mt5_credit_original_credit_id_deposit_id_fkey FOREIGN KEY (original_credit_id, deposit_id) REFERENCES mt5credit.mt5_credit(id, deposit_id);


--
-- Name: mt5_credit mt5_credit_original_withdrawal_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.mt5_credit
    ADD CONSTRAINT mt5_credit_original_withdrawal_fkey FOREIGN KEY (original_credit_id, withdrawal_id) REFERENCES mt5credit.mt5_credit(id, withdrawal_id);


--
-- Name: mt5_credit mt5_credit_paid_currency_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.mt5_credit
    ADD CONSTRAINT mt5_credit_paid_currency_fkey FOREIGN KEY (paid_currency) REFERENCES mt5credit.currency(code);


--
-- Name: mt5_credit mt5_credit_withdrawal_account_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.mt5_credit
    ADD CONSTRAINT mt5_credit_withdrawal_account_fkey FOREIGN KEY (withdrawal_id, mt5_server, mt5_login, currency) REFERENCES mt5credit.withdrawal(id, mt5_server, mt5_login, currency);


--
-- Name: mt5_credit mt5_credit_withdrawal_terms_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.mt5_credit
    ADD CONSTRAINT mt5_credit_withdrawal_terms_fkey FOREIGN KEY (withdrawal_id, withdrawal_amount_minor, withdrawal_status) REFERENCES mt5credit.withdrawal(id, amount_minor, status);


--
-- Name: outbound_attempt outbound_attempt_message_id_endpoint_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.outbound_attempt
    ADD CONSTRAINT outbound_attempt_message_id_endpoint_fkey FOREIGN KEY (message_id, endpoint) REFERENCES mt5credit.outbound_delivery(message_id, endpoint);


--
-- Name: outbound_delivery outbound_delivery_endpoint_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.outbound_delivery
    ADD CONSTRAINT outbound_delivery_endpoint_fkey FOREIGN KEY (endpoint) REFERENCES mt5credit.outbound_endpoint(name);


--
-- Name: outbound_delivery outbound_delivery_message_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.outbound_delivery
    ADD CONSTRAINT outbound_delivery_message_id_fkey FOREIGN KEY (message_id) REFERENCES mt5credit.outbound_message(id);


--
-- Name: payload_risk payload_risk_payload_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.payload_risk
    ADD CONSTRAINT payload_risk_payload_fkey FOREIGN KEY (payload) REFERENCES mt5credit.payload_format(payload);


--
-- Name: payload_rule payload_rule_payload_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.payload_rule
    ADD CONSTRAINT payload_rule_payload_fkey FOREIGN KEY (payload) REFERENCES mt5credit.payload_format(payload);


--
-- Name: payout_currency payout_currency_currency_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.payout_currency
    ADD CONSTRAINT payout_currency_currency_fkey FOREIGN KEY (currency) REFERENCES mt5credit.currency(code);


--
-- Name: payout payout_debit_credit_id_withdrawal_id_debit_kind_debit_stat_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.payout
    ADD CONSTRAINT payout_debit_credit_id_withdrawal_id_debit_kind_debit_stat_fkey FOREIGN KEY (debit_credit_id, withdrawal_id, debit_kind, debit_status) REFERENCES mt5credit.mt5_credit(id, withdrawal_id, kind, status);


--
-- Name: payout_history payout_history_payout_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.payout_history
    ADD CONSTRAINT payout_history_payout_id_fkey FOREIGN KEY (payout_id) REFERENCES mt5credit.payout(id);


--
-- Name: payout payout_is_its_leg; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.payout
    ADD CONSTRAINT payout_is_its_leg FOREIGN KEY (withdrawal_id, plan_no, leg, leg_kind, provider, amount_minor, currency) REFERENCES mt5credit.withdrawal_leg(withdrawal_id, plan_no, leg, kind, provider, amount_minor, currency);


--
-- Name: payout payout_of_the_approved_plan; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.payout
    ADD CONSTRAINT payout_of_the_approved_plan FOREIGN KEY (withdrawal_id, plan_no) REFERENCES mt5credit.withdrawal(id, plan_no);


--
-- Name: payout payout_to_the_destination; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.payout
    ADD CONSTRAINT payout_to_the_destination FOREIGN KEY (withdrawal_id, provider, currency, destination) REFERENCES mt5credit.withdrawal(id, provider, currency, destination);


--
-- Name: provider_payload provider_payload_payload_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.provider_payload
    ADD CONSTRAINT provider_payload_payload_fkey FOREIGN KEY (payload) REFERENCES mt5credit.payload_format(payload);


--
-- Name: recon_clock recon_clock_run_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.recon_clock
    ADD CONSTRAINT recon_clock_run_id_fkey FOREIGN KEY (run_id) REFERENCES mt5credit.recon_run(id);


--
-- Name: recon_control recon_control_currency_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.recon_control
    ADD CONSTRAINT recon_control_currency_fkey FOREIGN KEY (currency) REFERENCES mt5credit.currency(code);


--
-- Name: recon_control recon_control_run_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.recon_control
    ADD CONSTRAINT recon_control_run_id_fkey FOREIGN KEY (run_id) REFERENCES mt5credit.recon_run(id);


--
-- Name: recon_count recon_count_run_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.recon_count
    ADD CONSTRAINT recon_count_run_id_fkey FOREIGN KEY (run_id) REFERENCES mt5credit.recon_run(id);


--
-- Name: recon_item recon_item_case_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.recon_item
    ADD CONSTRAINT recon_item_case_id_fkey FOREIGN KEY (case_id) REFERENCES mt5credit."case"(id);


--
-- Name: recon_item recon_item_run_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.recon_item
    ADD CONSTRAINT recon_item_run_id_fkey FOREIGN KEY (run_id) REFERENCES mt5credit.recon_run(id);


--
-- Name: recon_matched_later recon_matched_later_first_run_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.recon_matched_later
    ADD CONSTRAINT recon_matched_later_first_run_id_fkey FOREIGN KEY (first_run_id) REFERENCES mt5credit.recon_run(id);


--
-- Name: recon_matched_later recon_matched_later_run_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.recon_matched_later
    ADD CONSTRAINT recon_matched_later_run_id_fkey FOREIGN KEY (run_id) REFERENCES mt5credit.recon_run(id);


--
-- Name: recon_paired_ahead recon_paired_ahead_credit_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.recon_paired_ahead
    ADD CONSTRAINT recon_paired_ahead_credit_id_fkey FOREIGN KEY (credit_id) REFERENCES mt5credit.mt5_credit(id);


--
-- Name: recon_paired_ahead recon_paired_ahead_run_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.recon_paired_ahead
    ADD CONSTRAINT recon_paired_ahead_run_id_fkey FOREIGN KEY (run_id) REFERENCES mt5credit.recon_run(id);


--
-- Name: recon_report recon_report_run_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.recon_report
    ADD CONSTRAINT recon_report_run_id_fkey FOREIGN KEY (run_id) REFERENCES mt5credit.recon_run(id);


--
-- Name: recon_run recon_run_carried_from_run_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.recon_run
    ADD CONSTRAINT recon_run_carried_from_run_id_fkey FOREIGN KEY (carried_from_run_id) REFERENCES mt5credit.recon_run(id);


--
-- Name: recon_run recon_run_currency_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.recon_run
    ADD CONSTRAINT recon_run_currency_fkey FOREIGN KEY (currency) REFERENCES mt5credit.currency(code);


--
-- Name: recon_run recon_run_previous_run_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.recon_run
    ADD CONSTRAINT recon_run_previous_run_id_fkey FOREIGN KEY (previous_run_id) REFERENCES mt5credit.recon_run(id);


--
-- Name: risk_rule_change risk_rule_change_currency_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.risk_rule_change
    ADD CONSTRAINT risk_rule_change_currency_fkey FOREIGN KEY (currency) REFERENCES mt5credit.currency(code);


--
-- Name: risk_rule risk_rule_change_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.risk_rule
    ADD CONSTRAINT risk_rule_change_id_fkey FOREIGN KEY (change_id) REFERENCES mt5credit.risk_rule_change(id);


--
-- Name: risk_rule risk_rule_currency_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.risk_rule
    ADD CONSTRAINT risk_rule_currency_fkey FOREIGN KEY (currency) REFERENCES mt5credit.currency(code);


--
-- Name: settle_verification settle_verification_credit_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.settle_verification
    ADD CONSTRAINT settle_verification_credit_id_fkey FOREIGN KEY (credit_id) REFERENCES mt5credit.mt5_credit(id);


--
-- Name: settle_verification settle_verification_proposal_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.settle_verification
    ADD CONSTRAINT settle_verification_proposal_id_fkey FOREIGN KEY (proposal_id) REFERENCES mt5credit.money_proposal(id);


--
-- Name: webhook_event_conflict webhook_event_conflict_event_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.webhook_event_conflict
    ADD CONSTRAINT webhook_event_conflict_event_id_fkey FOREIGN KEY (event_id) REFERENCES mt5credit.webhook_event(id);


--
-- Name: webhook_event webhook_event_credit_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.webhook_event
    ADD CONSTRAINT webhook_event_credit_id_fkey FOREIGN KEY (credit_id) REFERENCES mt5credit.mt5_credit(id) DEFERRABLE INITIALLY DEFERRED;


--
-- Name: webhook_event_replay webhook_event_replay_credit_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.webhook_event_replay
    ADD CONSTRAINT webhook_event_replay_credit_id_fkey FOREIGN KEY (credit_id) REFERENCES mt5credit.mt5_credit(id);


--
-- Name: webhook_event_replay webhook_event_replay_event_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.webhook_event_replay
    ADD CONSTRAINT webhook_event_replay_event_id_fkey FOREIGN KEY (event_id) REFERENCES mt5credit.webhook_event(id);


--
-- Name: webhook_event_replay webhook_event_replay_recon_run_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.webhook_event_replay
    ADD CONSTRAINT webhook_event_replay_recon_run_id_fkey FOREIGN KEY (recon_run_id) REFERENCES mt5credit.recon_run(id);


--
-- Name: withdrawal withdrawal_currency_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal
    ADD CONSTRAINT withdrawal_currency_fkey FOREIGN KEY (currency) REFERENCES mt5credit.currency(code);


--
-- Name: withdrawal_leg withdrawal_leg_credit_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal_leg
    ADD CONSTRAINT withdrawal_leg_credit_id_fkey FOREIGN KEY (credit_id) REFERENCES mt5credit.mt5_credit(id);


--
-- Name: withdrawal_leg withdrawal_leg_currency_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal_leg
    ADD CONSTRAINT withdrawal_leg_currency_fkey FOREIGN KEY (currency) REFERENCES mt5credit.currency(code);


--
-- Name: withdrawal_leg withdrawal_leg_withdrawal_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal_leg
    ADD CONSTRAINT withdrawal_leg_withdrawal_id_fkey FOREIGN KEY (withdrawal_id) REFERENCES mt5credit.withdrawal(id);


--
-- Name: withdrawal withdrawal_mt5_server_mt5_login_client_id_currency_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal
    ADD CONSTRAINT withdrawal_mt5_server_mt5_login_client_id_currency_fkey FOREIGN KEY (mt5_server, mt5_login, client_id, currency) REFERENCES mt5credit.client_account(mt5_server, mt5_login, client_id, currency);


--
-- Name: withdrawal_refund withdrawal_refund_debit_credit_id_withdrawal_id_debit_kind_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal_refund
    ADD CONSTRAINT withdrawal_refund_debit_credit_id_withdrawal_id_debit_kind_fkey FOREIGN KEY (debit_credit_id, withdrawal_id, debit_kind, debit_status) REFERENCES mt5credit.mt5_credit(id, withdrawal_id, kind, status);


--
-- Name: withdrawal_refund_history withdrawal_refund_history_refund_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal_refund_history
    ADD CONSTRAINT withdrawal_refund_history_refund_id_fkey FOREIGN KEY (refund_id) REFERENCES mt5credit.withdrawal_refund(id);


--
-- Name: withdrawal_refund withdrawal_refund_withdrawal_id_plan_no_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal_refund
    ADD CONSTRAINT withdrawal_refund_withdrawal_id_plan_no_fkey FOREIGN KEY (withdrawal_id, plan_no) REFERENCES mt5credit.withdrawal(id, plan_no);


--
-- Name: withdrawal_refund withdrawal_refund_withdrawal_id_plan_no_leg_leg_kind_provi_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal_refund
    ADD CONSTRAINT withdrawal_refund_withdrawal_id_plan_no_leg_leg_kind_provi_fkey FOREIGN KEY (withdrawal_id, plan_no, leg, leg_kind, provider, credit_id, payment_key, amount_minor, currency, account_amount_minor) REFERENCES mt5credit.withdrawal_leg(withdrawal_id, plan_no, leg, kind, provider, credit_id, payment_key, amount_minor, currency, account_amount_minor);


--
-- Name: withdrawal withdrawal_trading_after_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal
    ADD CONSTRAINT withdrawal_trading_after_fkey FOREIGN KEY (trading_after) REFERENCES mt5credit.mt5_credit(id);


--
-- Name: withdrawal_trading_try withdrawal_trading_try_withdrawal_id_fkey; Type: FK CONSTRAINT; Schema: mt5credit; Owner: mt5credit_owner
--

ALTER TABLE ONLY mt5credit.withdrawal_trading_try
    ADD CONSTRAINT withdrawal_trading_try_withdrawal_id_fkey FOREIGN KEY (withdrawal_id) REFERENCES mt5credit.withdrawal(id) ON DELETE CASCADE;


--
-- Name: SCHEMA mt5credit; Type: ACL; Schema: -; Owner: mt5credit_owner
--

GRANT USAGE ON SCHEMA mt5credit TO mt5credit_ingest;
GRANT USAGE ON SCHEMA mt5credit TO mt5credit_portal;
GRANT USAGE ON SCHEMA mt5credit TO mt5credit_worker;
GRANT USAGE ON SCHEMA mt5credit TO mt5credit_operator;
GRANT USAGE ON SCHEMA mt5credit TO mt5credit_reader;
GRANT USAGE ON SCHEMA mt5credit TO mt5credit_recon;
GRANT USAGE ON SCHEMA mt5credit TO mt5credit_query;
GRANT USAGE ON SCHEMA mt5credit TO mt5credit_console;
GRANT USAGE ON SCHEMA mt5credit TO mt5credit_person_admin;
GRANT USAGE ON SCHEMA mt5credit TO mt5credit_retention;
GRANT USAGE ON SCHEMA mt5credit TO mt5credit_audit;
GRANT USAGE ON SCHEMA mt5credit TO mt5credit_outbound;


--
-- Name: FUNCTION backfill_event(p_provider text, p_event_id text, p_event bytea); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.backfill_event(p_provider text, p_event_id text, p_event bytea) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.backfill_event(p_provider text, p_event_id text, p_event bytea) TO mt5credit_query;


--
-- Name: FUNCTION backfill_request_add(p_provider text, p_since timestamp with time zone, p_reason text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.backfill_request_add(p_provider text, p_since timestamp with time zone, p_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.backfill_request_add(p_provider text, p_since timestamp with time zone, p_reason text) TO mt5credit_operator;


--
-- Name: FUNCTION backfill_request_guard(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.backfill_request_guard() FROM PUBLIC;


--
-- Name: FUNCTION backfill_requests_done(p_ids bigint[], p_complete boolean, p_outcome text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.backfill_requests_done(p_ids bigint[], p_complete boolean, p_outcome text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.backfill_requests_done(p_ids bigint[], p_complete boolean, p_outcome text) TO mt5credit_query;


--
-- Name: FUNCTION backfill_requests_list(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.backfill_requests_list() FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.backfill_requests_list() TO mt5credit_operator;
GRANT ALL ON FUNCTION mt5credit.backfill_requests_list() TO mt5credit_reader;


--
-- Name: FUNCTION backfill_requests_take(p_provider text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.backfill_requests_take(p_provider text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.backfill_requests_take(p_provider text) TO mt5credit_query;


--
-- Name: FUNCTION base32(p bytea); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.base32(p bytea) FROM PUBLIC;


--
-- Name: FUNCTION batch_entry(p_key text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.batch_entry(p_key text) FROM PUBLIC;


--
-- Name: FUNCTION case_assign(p_case bigint, p_to text, p_note text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.case_assign(p_case bigint, p_to text, p_note text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.case_assign(p_case bigint, p_to text, p_note text) TO mt5credit_operator;


--
-- Name: FUNCTION case_decide(p_proposal bigint, p_decision text, p_note text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.case_decide(p_proposal bigint, p_decision text, p_note text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.case_decide(p_proposal bigint, p_decision text, p_note text) TO mt5credit_operator;


--
-- Name: FUNCTION case_guard(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.case_guard() FROM PUBLIC;


--
-- Name: FUNCTION case_list(p_kind text, p_status text, p_min_age interval, p_limit integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.case_list(p_kind text, p_status text, p_min_age interval, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.case_list(p_kind text, p_status text, p_min_age interval, p_limit integer) TO mt5credit_operator;
GRANT ALL ON FUNCTION mt5credit.case_list(p_kind text, p_status text, p_min_age interval, p_limit integer) TO mt5credit_reader;


--
-- Name: FUNCTION case_note(p_case bigint, p_note text, p_evidence jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.case_note(p_case bigint, p_note text, p_evidence jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.case_note(p_case bigint, p_note text, p_evidence jsonb) TO mt5credit_operator;


--
-- Name: FUNCTION case_priority(p_amount_minor bigint, p_currency text, p_opened_at timestamp with time zone, p_now timestamp with time zone); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.case_priority(p_amount_minor bigint, p_currency text, p_opened_at timestamp with time zone, p_now timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION case_propose(p_case bigint, p_action text, p_credit_id bigint, p_amount text, p_note text, p_evidence jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.case_propose(p_case bigint, p_action text, p_credit_id bigint, p_amount text, p_note text, p_evidence jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.case_propose(p_case bigint, p_action text, p_credit_id bigint, p_amount text, p_note text, p_evidence jsonb) TO mt5credit_operator;


--
-- Name: FUNCTION case_propose_settle_done(p_case bigint, p_credit_id bigint, p_ticket bigint, p_note text, p_evidence jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.case_propose_settle_done(p_case bigint, p_credit_id bigint, p_ticket bigint, p_note text, p_evidence jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.case_propose_settle_done(p_case bigint, p_credit_id bigint, p_ticket bigint, p_note text, p_evidence jsonb) TO mt5credit_operator;


--
-- Name: FUNCTION case_resolve(p_case bigint, p_resolution text, p_note text, p_evidence jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.case_resolve(p_case bigint, p_resolution text, p_note text, p_evidence jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.case_resolve(p_case bigint, p_resolution text, p_note text, p_evidence jsonb) TO mt5credit_operator;


--
-- Name: FUNCTION case_show(p_case bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.case_show(p_case bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.case_show(p_case bigint) TO mt5credit_operator;


--
-- Name: FUNCTION claim_credit(p_worker text, p_lease_seconds integer, p_servers text[]); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.claim_credit(p_worker text, p_lease_seconds integer, p_servers text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.claim_credit(p_worker text, p_lease_seconds integer, p_servers text[]) TO mt5credit_worker;


--
-- Name: FUNCTION client_name_set(p_client text, p_name text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.client_name_set(p_client text, p_name text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.client_name_set(p_client text, p_name text) TO mt5credit_portal;


--
-- Name: FUNCTION console_act(p jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.console_act(p jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.console_act(p jsonb) TO mt5credit_operator;


--
-- Name: FUNCTION console_act_admit(p_person text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.console_act_admit(p_person text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.console_act_admit(p_person text) TO mt5credit_console;


--
-- Name: FUNCTION console_call(p_identity text, p_endpoint text, p1 text, p2 text, p3 text, p4 text, p5 text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.console_call(p_identity text, p_endpoint text, p1 text, p2 text, p3 text, p4 text, p5 text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.console_call(p_identity text, p_endpoint text, p1 text, p2 text, p3 text, p4 text, p5 text) TO mt5credit_console;


--
-- Name: FUNCTION console_person_of(p_identity text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.console_person_of(p_identity text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.console_person_of(p_identity text) TO mt5credit_console;


--
-- Name: FUNCTION console_search(p_q text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.console_search(p_q text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.console_search(p_q text) TO mt5credit_operator;
GRANT ALL ON FUNCTION mt5credit.console_search(p_q text) TO mt5credit_reader;


--
-- Name: FUNCTION console_whoami(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.console_whoami() FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.console_whoami() TO mt5credit_operator;
GRANT ALL ON FUNCTION mt5credit.console_whoami() TO mt5credit_reader;


--
-- Name: FUNCTION convert_minor(p_amount_minor bigint, p_from text, p_to text, p_rate numeric); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.convert_minor(p_amount_minor bigint, p_from text, p_to text, p_rate numeric) FROM PUBLIC;


--
-- Name: FUNCTION create_deposit(p_client_id text, p_idempotency_key text, p_provider text, p_mt5_server text, p_mt5_login bigint, p_amount_minor bigint, p_currency text, p_fx_rate numeric, p_fx_source text, p_fx_at timestamp with time zone); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.create_deposit(p_client_id text, p_idempotency_key text, p_provider text, p_mt5_server text, p_mt5_login bigint, p_amount_minor bigint, p_currency text, p_fx_rate numeric, p_fx_source text, p_fx_at timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.create_deposit(p_client_id text, p_idempotency_key text, p_provider text, p_mt5_server text, p_mt5_login bigint, p_amount_minor bigint, p_currency text, p_fx_rate numeric, p_fx_source text, p_fx_at timestamp with time zone) TO mt5credit_portal;


--
-- Name: FUNCTION credit_actor(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.credit_actor() FROM PUBLIC;


--
-- Name: FUNCTION credit_case_decide(p_proposal bigint, p_decision text, p_note text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.credit_case_decide(p_proposal bigint, p_decision text, p_note text) FROM PUBLIC;


--
-- Name: FUNCTION credit_case_propose(p_case bigint, p_action text, p_credit_id bigint, p_amount text, p_note text, p_evidence jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.credit_case_propose(p_case bigint, p_action text, p_credit_id bigint, p_amount text, p_note text, p_evidence jsonb) FROM PUBLIC;


--
-- Name: FUNCTION credit_detail(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.credit_detail() FROM PUBLIC;


--
-- Name: FUNCTION credit_done_closes_no_answer(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.credit_done_closes_no_answer() FROM PUBLIC;


--
-- Name: FUNCTION credit_failed(p_id bigint, p_attempt integer, p_case_kind text, p_worker text, p_detail jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.credit_failed(p_id bigint, p_attempt integer, p_case_kind text, p_worker text, p_detail jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.credit_failed(p_id bigint, p_attempt integer, p_case_kind text, p_worker text, p_detail jsonb) TO mt5credit_worker;


--
-- Name: FUNCTION credit_guard_and_log(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.credit_guard_and_log() FROM PUBLIC;


--
-- Name: FUNCTION credit_held_for_fixed(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.credit_held_for_fixed() FROM PUBLIC;


--
-- Name: FUNCTION credit_inherit_withdrawal(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.credit_inherit_withdrawal() FROM PUBLIC;


--
-- Name: FUNCTION credit_latency_count(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.credit_latency_count() FROM PUBLIC;


--
-- Name: FUNCTION credit_latency_le(p_ms bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.credit_latency_le(p_ms bigint) FROM PUBLIC;


--
-- Name: FUNCTION credit_latency_ms(p_created timestamp with time zone, p_done timestamp with time zone); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.credit_latency_ms(p_created timestamp with time zone, p_done timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION credit_on_hold(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.credit_on_hold() FROM PUBLIC;


--
-- Name: FUNCTION credit_orphan_deal(p_id bigint, p_attempt integer, p_ticket bigint, p_worker text, p_detail jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.credit_orphan_deal(p_id bigint, p_attempt integer, p_ticket bigint, p_worker text, p_detail jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.credit_orphan_deal(p_id bigint, p_attempt integer, p_ticket bigint, p_worker text, p_detail jsonb) TO mt5credit_worker;


--
-- Name: FUNCTION credit_release(p_id bigint, p_attempt integer, p_worker text, p_detail jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.credit_release(p_id bigint, p_attempt integer, p_worker text, p_detail jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.credit_release(p_id bigint, p_attempt integer, p_worker text, p_detail jsonb) TO mt5credit_worker;


--
-- Name: FUNCTION credit_risk_facts_fixed(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.credit_risk_facts_fixed() FROM PUBLIC;


--
-- Name: FUNCTION credit_succeeded(p_id bigint, p_attempt integer, p_ticket bigint, p_worker text, p_detail jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.credit_succeeded(p_id bigint, p_attempt integer, p_ticket bigint, p_worker text, p_detail jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.credit_succeeded(p_id bigint, p_attempt integer, p_ticket bigint, p_worker text, p_detail jsonb) TO mt5credit_worker;


--
-- Name: FUNCTION credit_unknown(p_id bigint, p_attempt integer, p_worker text, p_detail jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.credit_unknown(p_id bigint, p_attempt integer, p_worker text, p_detail jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.credit_unknown(p_id bigint, p_attempt integer, p_worker text, p_detail jsonb) TO mt5credit_worker;


--
-- Name: FUNCTION credit_withdrawal_fixed(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.credit_withdrawal_fixed() FROM PUBLIC;


--
-- Name: FUNCTION database_rewound(p_worker text, p_lease_seconds integer, p_detail jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.database_rewound(p_worker text, p_lease_seconds integer, p_detail jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.database_rewound(p_worker text, p_lease_seconds integer, p_detail jsonb) TO mt5credit_worker;


--
-- Name: FUNCTION database_timeline_now(OUT system_identifier text, OUT timeline integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.database_timeline_now(OUT system_identifier text, OUT timeline integer) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.database_timeline_now(OUT system_identifier text, OUT timeline integer) TO mt5credit_audit;


--
-- Name: FUNCTION db_identity(p_credits bigint[], p_attempts integer[]); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.db_identity(p_credits bigint[], p_attempts integer[]) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.db_identity(p_credits bigint[], p_attempts integer[]) TO mt5credit_worker;


--
-- Name: FUNCTION decision_allowed(p_what text, p_status text, p_proposed_by text, p_decision text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.decision_allowed(p_what text, p_status text, p_proposed_by text, p_decision text) FROM PUBLIC;


--
-- Name: FUNCTION deployment_stamp(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.deployment_stamp() FROM PUBLIC;


--
-- Name: FUNCTION deployment_tag(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.deployment_tag() FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.deployment_tag() TO mt5credit_worker;
GRANT ALL ON FUNCTION mt5credit.deployment_tag() TO mt5credit_recon;
GRANT ALL ON FUNCTION mt5credit.deployment_tag() TO mt5credit_query;
GRANT ALL ON FUNCTION mt5credit.deployment_tag() TO mt5credit_operator;
GRANT ALL ON FUNCTION mt5credit.deployment_tag() TO mt5credit_reader;
GRANT ALL ON FUNCTION mt5credit.deployment_tag() TO mt5credit_outbound;


--
-- Name: FUNCTION deposit_guard_and_log(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.deposit_guard_and_log() FROM PUBLIC;


--
-- Name: FUNCTION deposit_observe(p_deposit bigint, p_status text, p_source text, p_detail jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.deposit_observe(p_deposit bigint, p_status text, p_source text, p_detail jsonb) FROM PUBLIC;


--
-- Name: FUNCTION deposit_refund_state(p_client_id text, p_reference text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.deposit_refund_state(p_client_id text, p_reference text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.deposit_refund_state(p_client_id text, p_reference text) TO mt5credit_portal;


--
-- Name: FUNCTION deposit_set_session(p_client_id text, p_reference text, p_session_id text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.deposit_set_session(p_client_id text, p_reference text, p_session_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.deposit_set_session(p_client_id text, p_reference text, p_session_id text) TO mt5credit_portal;


--
-- Name: FUNCTION deposit_status(p_client_id text, p_reference text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.deposit_status(p_client_id text, p_reference text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.deposit_status(p_client_id text, p_reference text) TO mt5credit_portal;


--
-- Name: FUNCTION desk_case(p_case bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.desk_case(p_case bigint) FROM PUBLIC;


--
-- Name: FUNCTION desk_record(p_case bigint, p_action text, p_before jsonb, p_after jsonb, p_note text, p_evidence jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.desk_record(p_case bigint, p_action text, p_before jsonb, p_after jsonb, p_note text, p_evidence jsonb) FROM PUBLIC;


--
-- Name: FUNCTION desk_require_no_open_proposal(p_case bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.desk_require_no_open_proposal(p_case bigint) FROM PUBLIC;


--
-- Name: FUNCTION desk_require_open(c mt5credit."case"); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.desk_require_open(c mt5credit."case") FROM PUBLIC;


--
-- Name: FUNCTION event_replay(p_event bigint, p_reason text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.event_replay(p_event bigint, p_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.event_replay(p_event bigint, p_reason text) TO mt5credit_operator;


--
-- Name: FUNCTION person(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.person() FROM PUBLIC;


--
-- Name: FUNCTION event_replay_as(p_event bigint, p_reason text, p_run bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.event_replay_as(p_event bigint, p_reason text, p_run bigint) FROM PUBLIC;


--
-- Name: FUNCTION event_show(p_event bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.event_show(p_event bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.event_show(p_event bigint) TO mt5credit_operator;
GRANT ALL ON FUNCTION mt5credit.event_show(p_event bigint) TO mt5credit_reader;


--
-- Name: FUNCTION events_list(p_provider text, p_type text, p_disposition text, p_payment text, p_since timestamp with time zone, p_limit integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.events_list(p_provider text, p_type text, p_disposition text, p_payment text, p_since timestamp with time zone, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.events_list(p_provider text, p_type text, p_disposition text, p_payment text, p_since timestamp with time zone, p_limit integer) TO mt5credit_operator;
GRANT ALL ON FUNCTION mt5credit.events_list(p_provider text, p_type text, p_disposition text, p_payment text, p_since timestamp with time zone, p_limit integer) TO mt5credit_reader;


--
-- Name: FUNCTION events_list(p_provider text, p_type text, p_disposition text, p_payment text, p_deposit text, p_since timestamp with time zone, p_until timestamp with time zone, p_request_id text, p_limit integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.events_list(p_provider text, p_type text, p_disposition text, p_payment text, p_deposit text, p_since timestamp with time zone, p_until timestamp with time zone, p_request_id text, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.events_list(p_provider text, p_type text, p_disposition text, p_payment text, p_deposit text, p_since timestamp with time zone, p_until timestamp with time zone, p_request_id text, p_limit integer) TO mt5credit_operator;
GRANT ALL ON FUNCTION mt5credit.events_list(p_provider text, p_type text, p_disposition text, p_payment text, p_deposit text, p_since timestamp with time zone, p_until timestamp with time zone, p_request_id text, p_limit integer) TO mt5credit_reader;


--
-- Name: FUNCTION exact_minor(p_amount text, p_currency text, p_what text, p_example text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.exact_minor(p_amount text, p_currency text, p_what text, p_example text) FROM PUBLIC;


--
-- Name: FUNCTION exact_volume(p_lots text, p_what text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.exact_volume(p_lots text, p_what text) FROM PUBLIC;


--
-- Name: FUNCTION hold_case_guard(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.hold_case_guard() FROM PUBLIC;


--
-- Name: FUNCTION ingest(p_provider text, p_event_id text, p_raw_body bytea, p_scheme text, p_signed_at bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.ingest(p_provider text, p_event_id text, p_raw_body bytea, p_scheme text, p_signed_at bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.ingest(p_provider text, p_event_id text, p_raw_body bytea, p_scheme text, p_signed_at bigint) TO mt5credit_ingest;


--
-- Name: FUNCTION ingest(p_provider text, p_event_id text, p_raw_body bytea, p_scheme text, p_signed_at bigint, p_request_id text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.ingest(p_provider text, p_event_id text, p_raw_body bytea, p_scheme text, p_signed_at bigint, p_request_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.ingest(p_provider text, p_event_id text, p_raw_body bytea, p_scheme text, p_signed_at bigint, p_request_id text) TO mt5credit_ingest;


--
-- Name: FUNCTION ingest_batch(p_provider text[], p_event_id text[], p_raw_body bytea[], p_scheme text[], p_signed_at bigint[], p_request_id text[]); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.ingest_batch(p_provider text[], p_event_id text[], p_raw_body bytea[], p_scheme text[], p_signed_at bigint[], p_request_id text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.ingest_batch(p_provider text[], p_event_id text[], p_raw_body bytea[], p_scheme text[], p_signed_at bigint[], p_request_id text[]) TO mt5credit_ingest;


--
-- Name: FUNCTION ingest_facts(p_provider text, p_type text, p_body jsonb, p_event bigint, p_event_id text, p_credit bigint, OUT disposition text, OUT credit_id bigint, OUT created boolean, OUT detail text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.ingest_facts(p_provider text, p_type text, p_body jsonb, p_event bigint, p_event_id text, p_credit bigint, OUT disposition text, OUT credit_id bigint, OUT created boolean, OUT detail text) FROM PUBLIC;


--
-- Name: FUNCTION ingest_malformed(p_provider text, p_raw_body bytea, p_sha bytea, p_scheme text, p_signed_at bigint, p_request_id text, p_reason text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.ingest_malformed(p_provider text, p_raw_body bytea, p_sha bytea, p_scheme text, p_signed_at bigint, p_request_id text, p_reason text) FROM PUBLIC;


--
-- Name: FUNCTION ingest_paid(p_provider text, f mt5credit.payment_fact, p_event bigint, p_credit bigint, p_risk mt5credit.risk_fact); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.ingest_paid(p_provider text, f mt5credit.payment_fact, p_event bigint, p_credit bigint, p_risk mt5credit.risk_fact) FROM PUBLIC;


--
-- Name: FUNCTION ingest_payout_status(p_provider text, f mt5credit.payment_fact, p_event bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.ingest_payout_status(p_provider text, f mt5credit.payment_fact, p_event bigint) FROM PUBLIC;


--
-- Name: FUNCTION ingest_reversal(p_provider text, f mt5credit.payment_fact, p_event bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.ingest_reversal(p_provider text, f mt5credit.payment_fact, p_event bigint) FROM PUBLIC;


--
-- Name: FUNCTION ingest_review(p_provider text, f mt5credit.payment_fact, p_event bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.ingest_review(p_provider text, f mt5credit.payment_fact, p_event bigint) FROM PUBLIC;


--
-- Name: FUNCTION ingest_status(p_provider text, f mt5credit.payment_fact, p_event bigint, p_event_id text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.ingest_status(p_provider text, f mt5credit.payment_fact, p_event bigint, p_event_id text) FROM PUBLIC;


--
-- Name: FUNCTION ingest_withdrawal_refund(p_provider text, f mt5credit.payment_fact, p_event bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.ingest_withdrawal_refund(p_provider text, f mt5credit.payment_fact, p_event bigint) FROM PUBLIC;


--
-- Name: FUNCTION journal_append(p_chain text, p_source text, p_source_id bigint, p_entry jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.journal_append(p_chain text, p_source text, p_source_id bigint, p_entry jsonb) FROM PUBLIC;


--
-- Name: TABLE webhook_event; Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

GRANT SELECT ON TABLE mt5credit.webhook_event TO mt5credit_audit;


--
-- Name: FUNCTION journal_event_fact(e mt5credit.webhook_event); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.journal_event_fact(e mt5credit.webhook_event) FROM PUBLIC;


--
-- Name: FUNCTION journal_record(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.journal_record() FROM PUBLIC;


--
-- Name: FUNCTION journal_record_events(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.journal_record_events() FROM PUBLIC;


--
-- Name: FUNCTION journal_record_ingest(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.journal_record_ingest() FROM PUBLIC;


--
-- Name: FUNCTION json_decimal_minor(p jsonb, p_currency text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.json_decimal_minor(p jsonb, p_currency text) FROM PUBLIC;


--
-- Name: FUNCTION json_minor(p jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.json_minor(p jsonb) FROM PUBLIC;


--
-- Name: FUNCTION json_text(p jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.json_text(p jsonb) FROM PUBLIC;


--
-- Name: FUNCTION major_to_minor(p_amount numeric, p_currency text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.major_to_minor(p_amount numeric, p_currency text) FROM PUBLIC;


--
-- Name: FUNCTION money_proposal_guard(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.money_proposal_guard() FROM PUBLIC;


--
-- Name: FUNCTION mt5_comment(p_tag text, p_reference text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.mt5_comment(p_tag text, p_reference text) FROM PUBLIC;


--
-- Name: FUNCTION name_words(p_name text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.name_words(p_name text) FROM PUBLIC;


--
-- Name: FUNCTION names_match(p_a text, p_b text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.names_match(p_a text, p_b text) FROM PUBLIC;


--
-- Name: FUNCTION open_case(p_kind text, p_severity text, p_dedupe_key text, p_details jsonb, p_credit_id bigint, p_deposit_id bigint, p_webhook_event_id bigint, p_amount_minor bigint, p_currency text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.open_case(p_kind text, p_severity text, p_dedupe_key text, p_details jsonb, p_credit_id bigint, p_deposit_id bigint, p_webhook_event_id bigint, p_amount_minor bigint, p_currency text) FROM PUBLIC;


--
-- Name: FUNCTION outbound_append_only(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.outbound_append_only() FROM PUBLIC;


--
-- Name: FUNCTION outbound_backlog(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.outbound_backlog() FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.outbound_backlog() TO mt5credit_outbound;
GRANT ALL ON FUNCTION mt5credit.outbound_backlog() TO mt5credit_operator;
GRANT ALL ON FUNCTION mt5credit.outbound_backlog() TO mt5credit_reader;


--
-- Name: FUNCTION outbound_claim(p_sender text, p_endpoints text[], p_lease_seconds integer, p_limit integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.outbound_claim(p_sender text, p_endpoints text[], p_lease_seconds integer, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.outbound_claim(p_sender text, p_endpoints text[], p_lease_seconds integer, p_limit integer) TO mt5credit_outbound;


--
-- Name: FUNCTION outbound_credit_data(p_credit bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.outbound_credit_data(p_credit bigint) FROM PUBLIC;


--
-- Name: FUNCTION outbound_delivered(p_message bigint, p_endpoint text, p_sender text, p_http_status integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.outbound_delivered(p_message bigint, p_endpoint text, p_sender text, p_http_status integer) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.outbound_delivered(p_message bigint, p_endpoint text, p_sender text, p_http_status integer) TO mt5credit_outbound;


--
-- Name: FUNCTION outbound_disable_failing(p_endpoint text, p_sender text, p_after_seconds integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.outbound_disable_failing(p_endpoint text, p_sender text, p_after_seconds integer) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.outbound_disable_failing(p_endpoint text, p_sender text, p_after_seconds integer) TO mt5credit_outbound;


--
-- Name: FUNCTION outbound_emit(p_type text, p_subject text, p_data jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.outbound_emit(p_type text, p_subject text, p_data jsonb) FROM PUBLIC;


--
-- Name: FUNCTION outbound_endpoint_enable(p_name text, p_reason text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.outbound_endpoint_enable(p_name text, p_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.outbound_endpoint_enable(p_name text, p_reason text) TO mt5credit_operator;


--
-- Name: FUNCTION outbound_endpoint_register(p_name text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.outbound_endpoint_register(p_name text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.outbound_endpoint_register(p_name text) TO mt5credit_outbound;


--
-- Name: FUNCTION outbound_endpoint_retire(p_name text, p_reason text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.outbound_endpoint_retire(p_name text, p_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.outbound_endpoint_retire(p_name text, p_reason text) TO mt5credit_operator;


--
-- Name: FUNCTION outbound_failed(p_message bigint, p_endpoint text, p_sender text, p_http_status integer, p_error text, p_retry_seconds integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.outbound_failed(p_message bigint, p_endpoint text, p_sender text, p_http_status integer, p_error text, p_retry_seconds integer) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.outbound_failed(p_message bigint, p_endpoint text, p_sender text, p_http_status integer, p_error text, p_retry_seconds integer) TO mt5credit_outbound;


--
-- Name: FUNCTION outbound_list(p_since timestamp with time zone, p_status text, p_subject text, p_limit integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.outbound_list(p_since timestamp with time zone, p_status text, p_subject text, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.outbound_list(p_since timestamp with time zone, p_status text, p_subject text, p_limit integer) TO mt5credit_operator;
GRANT ALL ON FUNCTION mt5credit.outbound_list(p_since timestamp with time zone, p_status text, p_subject text, p_limit integer) TO mt5credit_reader;


--
-- Name: FUNCTION outbound_message_fixed(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.outbound_message_fixed() FROM PUBLIC;


--
-- Name: FUNCTION outbound_on_case(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.outbound_on_case() FROM PUBLIC;


--
-- Name: FUNCTION outbound_on_credit(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.outbound_on_credit() FROM PUBLIC;


--
-- Name: FUNCTION outbound_on_deposit(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.outbound_on_deposit() FROM PUBLIC;


--
-- Name: FUNCTION outbound_on_leg(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.outbound_on_leg() FROM PUBLIC;


--
-- Name: FUNCTION outbound_on_withdrawal(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.outbound_on_withdrawal() FROM PUBLIC;


--
-- Name: FUNCTION outbound_release(p_message bigint, p_endpoint text, p_sender text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.outbound_release(p_message bigint, p_endpoint text, p_sender text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.outbound_release(p_message bigint, p_endpoint text, p_sender text) TO mt5credit_outbound;


--
-- Name: FUNCTION outbound_replay(p_webhook_id text, p_endpoint text, p_reason text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.outbound_replay(p_webhook_id text, p_endpoint text, p_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.outbound_replay(p_webhook_id text, p_endpoint text, p_reason text) TO mt5credit_operator;


--
-- Name: FUNCTION outbound_replay_since(p_since timestamp with time zone, p_endpoint text, p_reason text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.outbound_replay_since(p_since timestamp with time zone, p_endpoint text, p_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.outbound_replay_since(p_since timestamp with time zone, p_endpoint text, p_reason text) TO mt5credit_operator;


--
-- Name: FUNCTION outbound_show(p_webhook_id text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.outbound_show(p_webhook_id text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.outbound_show(p_webhook_id text) TO mt5credit_operator;
GRANT ALL ON FUNCTION mt5credit.outbound_show(p_webhook_id text) TO mt5credit_reader;


--
-- Name: FUNCTION outbound_sweep(p_sender text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.outbound_sweep(p_sender text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.outbound_sweep(p_sender text) TO mt5credit_outbound;


--
-- Name: FUNCTION pause_guard(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.pause_guard() FROM PUBLIC;


--
-- Name: FUNCTION pause_list(p_all boolean); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.pause_list(p_all boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.pause_list(p_all boolean) TO mt5credit_operator;
GRANT ALL ON FUNCTION mt5credit.pause_list(p_all boolean) TO mt5credit_worker;
GRANT ALL ON FUNCTION mt5credit.pause_list(p_all boolean) TO mt5credit_reader;


--
-- Name: FUNCTION pause_resume(p_scope text, p_target text, p_note text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.pause_resume(p_scope text, p_target text, p_note text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.pause_resume(p_scope text, p_target text, p_note text) TO mt5credit_operator;


--
-- Name: FUNCTION pause_set(p_scope text, p_target text, p_reason text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.pause_set(p_scope text, p_target text, p_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.pause_set(p_scope text, p_target text, p_reason text) TO mt5credit_operator;


--
-- Name: FUNCTION paused(p_scope text, p_target text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.paused(p_scope text, p_target text) FROM PUBLIC;


--
-- Name: FUNCTION payload_amount(p jsonb, p_form text, p_currency text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.payload_amount(p jsonb, p_form text, p_currency text) FROM PUBLIC;


--
-- Name: FUNCTION payload_event(p_provider text, p_body jsonb, OUT event_id text, OUT event_type text, OUT event_part jsonpath); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.payload_event(p_provider text, p_body jsonb, OUT event_id text, OUT event_type text, OUT event_part jsonpath) FROM PUBLIC;


--
-- Name: FUNCTION payload_facts(p_provider text, p_type text, p_body jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.payload_facts(p_provider text, p_type text, p_body jsonb) FROM PUBLIC;


--
-- Name: FUNCTION payload_format_guard(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.payload_format_guard() FROM PUBLIC;


--
-- Name: FUNCTION payload_rule_guard(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.payload_rule_guard() FROM PUBLIC;


--
-- Name: FUNCTION payload_value(p_body jsonb, p_path jsonpath); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.payload_value(p_body jsonb, p_path jsonpath) FROM PUBLIC;


--
-- Name: FUNCTION payment_credit_after_rewind(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.payment_credit_after_rewind() FROM PUBLIC;


--
-- Name: FUNCTION payment_reference_key(p_provider text, p_payment text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.payment_reference_key(p_provider text, p_payment text) FROM PUBLIC;


--
-- Name: FUNCTION payout_absent(p_id bigint, p_attempt integer, p_sender text, p_detail jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.payout_absent(p_id bigint, p_attempt integer, p_sender text, p_detail jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.payout_absent(p_id bigint, p_attempt integer, p_sender text, p_detail jsonb) TO mt5credit_worker;


--
-- Name: FUNCTION payout_after_debit(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.payout_after_debit() FROM PUBLIC;


--
-- Name: FUNCTION payout_answered(p_id bigint, p_attempt integer, p_from text, p_payout_id text, p_status text, p_failure_code text, p_failure_message text, p_sender text, p_detail jsonb, p_recheck_seconds integer, p_watch_seconds integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.payout_answered(p_id bigint, p_attempt integer, p_from text, p_payout_id text, p_status text, p_failure_code text, p_failure_message text, p_sender text, p_detail jsonb, p_recheck_seconds integer, p_watch_seconds integer) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.payout_answered(p_id bigint, p_attempt integer, p_from text, p_payout_id text, p_status text, p_failure_code text, p_failure_message text, p_sender text, p_detail jsonb, p_recheck_seconds integer, p_watch_seconds integer) TO mt5credit_worker;


--
-- Name: FUNCTION payout_check_due(p_provider text, p_margin_seconds integer, p_lookup_seconds integer, p_limit integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.payout_check_due(p_provider text, p_margin_seconds integer, p_lookup_seconds integer, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.payout_check_due(p_provider text, p_margin_seconds integer, p_lookup_seconds integer, p_limit integer) TO mt5credit_worker;


--
-- Name: FUNCTION payout_check_failed(p_id bigint, p_attempt integer, p_case_kind text, p_why text, p_backoff_seconds integer, p_max_lookups integer, p_sender text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.payout_check_failed(p_id bigint, p_attempt integer, p_case_kind text, p_why text, p_backoff_seconds integer, p_max_lookups integer, p_sender text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.payout_check_failed(p_id bigint, p_attempt integer, p_case_kind text, p_why text, p_backoff_seconds integer, p_max_lookups integer, p_sender text) TO mt5credit_worker;


--
-- Name: FUNCTION payout_claim(p_provider text, p_sender text, p_lease_seconds integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.payout_claim(p_provider text, p_sender text, p_lease_seconds integer) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.payout_claim(p_provider text, p_sender text, p_lease_seconds integer) TO mt5credit_worker;


--
-- Name: FUNCTION payout_declined(p_id bigint, p_attempt integer, p_failure_code text, p_failure_message text, p_sender text, p_detail jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.payout_declined(p_id bigint, p_attempt integer, p_failure_code text, p_failure_message text, p_sender text, p_detail jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.payout_declined(p_id bigint, p_attempt integer, p_failure_code text, p_failure_message text, p_sender text, p_detail jsonb) TO mt5credit_worker;


--
-- Name: FUNCTION payout_guard_and_log(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.payout_guard_and_log() FROM PUBLIC;


--
-- Name: FUNCTION payout_item_of(p_id bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.payout_item_of(p_id bigint) FROM PUBLIC;


--
-- Name: FUNCTION payout_rejected_case(p mt5credit.payout); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.payout_rejected_case(p mt5credit.payout) FROM PUBLIC;


--
-- Name: FUNCTION payout_release(p_id bigint, p_attempt integer, p_sender text, p_detail jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.payout_release(p_id bigint, p_attempt integer, p_sender text, p_detail jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.payout_release(p_id bigint, p_attempt integer, p_sender text, p_detail jsonb) TO mt5credit_worker;


--
-- Name: FUNCTION payout_sweep(p_sender text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.payout_sweep(p_sender text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.payout_sweep(p_sender text) TO mt5credit_worker;


--
-- Name: FUNCTION payout_unknown(p_id bigint, p_attempt integer, p_sender text, p_detail jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.payout_unknown(p_id bigint, p_attempt integer, p_sender text, p_detail jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.payout_unknown(p_id bigint, p_attempt integer, p_sender text, p_detail jsonb) TO mt5credit_worker;


--
-- Name: FUNCTION payout_whole_without_plan(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.payout_whole_without_plan() FROM PUBLIC;


--
-- Name: FUNCTION person_identity_admin(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.person_identity_admin() FROM PUBLIC;


--
-- Name: FUNCTION person_identity_list(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.person_identity_list() FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.person_identity_list() TO mt5credit_person_admin;


--
-- Name: FUNCTION person_identity_map(p_identity text, p_person text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.person_identity_map(p_identity text, p_person text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.person_identity_map(p_identity text, p_person text) TO mt5credit_person_admin;


--
-- Name: FUNCTION person_identity_unmap(p_identity text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.person_identity_unmap(p_identity text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.person_identity_unmap(p_identity text) TO mt5credit_person_admin;


--
-- Name: FUNCTION person_is(p_role text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.person_is(p_role text) FROM PUBLIC;


--
-- Name: FUNCTION person_totp_enrol(p_person text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.person_totp_enrol(p_person text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.person_totp_enrol(p_person text) TO mt5credit_person_admin;
GRANT ALL ON FUNCTION mt5credit.person_totp_enrol(p_person text) TO mt5credit_operator;


--
-- Name: FUNCTION person_totp_list(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.person_totp_list() FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.person_totp_list() TO mt5credit_person_admin;


--
-- Name: FUNCTION person_totp_reset(p_person text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.person_totp_reset(p_person text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.person_totp_reset(p_person text) TO mt5credit_person_admin;
GRANT ALL ON FUNCTION mt5credit.person_totp_reset(p_person text) TO mt5credit_operator;


--
-- Name: FUNCTION person_totp_set(p_person text, p_action text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.person_totp_set(p_person text, p_action text) FROM PUBLIC;


--
-- Name: FUNCTION program_answer_unvouched(p_provider text, p_type text, p_body jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.program_answer_unvouched(p_provider text, p_type text, p_body jsonb) FROM PUBLIC;


--
-- Name: FUNCTION program_door_closed(p_provider text, p_door text, p_type text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.program_door_closed(p_provider text, p_door text, p_type text) FROM PUBLIC;


--
-- Name: FUNCTION provider_payload_guard(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.provider_payload_guard() FROM PUBLIC;


--
-- Name: FUNCTION provider_payload_new(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.provider_payload_new() FROM PUBLIC;


--
-- Name: FUNCTION query_answered(p_provider text, p_deposit bigint, p_type text, p_answer bytea); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.query_answered(p_provider text, p_deposit bigint, p_type text, p_answer bytea) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.query_answered(p_provider text, p_deposit bigint, p_type text, p_answer bytea) TO mt5credit_query;


--
-- Name: FUNCTION query_due(p_provider text, p_min_age interval, p_limit integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.query_due(p_provider text, p_min_age interval, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.query_due(p_provider text, p_min_age interval, p_limit integer) TO mt5credit_query;


--
-- Name: FUNCTION query_record(p_deposit bigint, p_why text, p_backoff interval, p_max_attempts integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.query_record(p_deposit bigint, p_why text, p_backoff interval, p_max_attempts integer) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.query_record(p_deposit bigint, p_why text, p_backoff interval, p_max_attempts integer) TO mt5credit_query;


--
-- Name: FUNCTION recon_begin(p_provider text, p_day date, p_time_zone text, p_currency text, p_format text, p_settlement_sha256 text, p_control_sha256 text, p_deal_grace interval); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.recon_begin(p_provider text, p_day date, p_time_zone text, p_currency text, p_format text, p_settlement_sha256 text, p_control_sha256 text, p_deal_grace interval) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.recon_begin(p_provider text, p_day date, p_time_zone text, p_currency text, p_format text, p_settlement_sha256 text, p_control_sha256 text, p_deal_grace interval) TO mt5credit_recon;


--
-- Name: FUNCTION recon_clock(p_run bigint, p_server text, p_offset_now integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.recon_clock(p_run bigint, p_server text, p_offset_now integer) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.recon_clock(p_run bigint, p_server text, p_offset_now integer) TO mt5credit_recon;


--
-- Name: FUNCTION recon_clock_near(p_run bigint, p_server text, p_at timestamp with time zone); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.recon_clock_near(p_run bigint, p_server text, p_at timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION recon_completeness(p_run bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.recon_completeness(p_run bigint) FROM PUBLIC;


--
-- Name: FUNCTION recon_deal_in_zoned(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.recon_deal_in_zoned() FROM PUBLIC;


--
-- Name: FUNCTION recon_deal_untag(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.recon_deal_untag() FROM PUBLIC;


--
-- Name: FUNCTION recon_digest(p_run bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.recon_digest(p_run bigint) FROM PUBLIC;


--
-- Name: FUNCTION recon_freshness(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.recon_freshness() FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.recon_freshness() TO mt5credit_worker;
GRANT ALL ON FUNCTION mt5credit.recon_freshness() TO mt5credit_reader;
GRANT ALL ON FUNCTION mt5credit.recon_freshness() TO mt5credit_operator;
GRANT ALL ON FUNCTION mt5credit.recon_freshness() TO mt5credit_recon;


--
-- Name: FUNCTION recon_incomplete(p_provider text, p_day date, p_time_zone text, p_currency text, p_format text, p_settlement_sha256 text, p_control_sha256 text, p_deal_grace interval, p_reason text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.recon_incomplete(p_provider text, p_day date, p_time_zone text, p_currency text, p_format text, p_settlement_sha256 text, p_control_sha256 text, p_deal_grace interval, p_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.recon_incomplete(p_provider text, p_day date, p_time_zone text, p_currency text, p_format text, p_settlement_sha256 text, p_control_sha256 text, p_deal_grace interval, p_reason text) TO mt5credit_recon;


--
-- Name: FUNCTION recon_legs(p_run bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.recon_legs(p_run bigint) FROM PUBLIC;


--
-- Name: FUNCTION recon_load_deals(p_run bigint, p_deals_digest text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.recon_load_deals(p_run bigint, p_deals_digest text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.recon_load_deals(p_run bigint, p_deals_digest text) TO mt5credit_recon;


--
-- Name: FUNCTION recon_load_settlement(p_run bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.recon_load_settlement(p_run bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.recon_load_settlement(p_run bigint) TO mt5credit_recon;


--
-- Name: FUNCTION recon_match(p_run bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.recon_match(p_run bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.recon_match(p_run bigint) TO mt5credit_recon;


--
-- Name: FUNCTION recon_prepare(p_run bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.recon_prepare(p_run bigint) FROM PUBLIC;


--
-- Name: FUNCTION recon_record_counts(p_run bigint, p_prev bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.recon_record_counts(p_run bigint, p_prev bigint) FROM PUBLIC;


--
-- Name: FUNCTION recon_record_items(p_run bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.recon_record_items(p_run bigint) FROM PUBLIC;


--
-- Name: FUNCTION recon_report_store(p_run bigint, p_html text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.recon_report_store(p_run bigint, p_html text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.recon_report_store(p_run bigint, p_html text) TO mt5credit_recon;


--
-- Name: FUNCTION recon_run_finish_clock(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.recon_run_finish_clock() FROM PUBLIC;


--
-- Name: FUNCTION recon_run_guard(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.recon_run_guard() FROM PUBLIC;


--
-- Name: TABLE recon_run; Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

GRANT SELECT ON TABLE mt5credit.recon_run TO mt5credit_recon;
GRANT SELECT ON TABLE mt5credit.recon_run TO mt5credit_reader;
GRANT SELECT ON TABLE mt5credit.recon_run TO mt5credit_operator;


--
-- Name: FUNCTION recon_running(p_run bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.recon_running(p_run bigint) FROM PUBLIC;


--
-- Name: FUNCTION recon_tickets(p_run bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.recon_tickets(p_run bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.recon_tickets(p_run bigint) TO mt5credit_recon;


--
-- Name: FUNCTION recon_window(p_run bigint, p_days integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.recon_window(p_run bigint, p_days integer) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.recon_window(p_run bigint, p_days integer) TO mt5credit_recon;


--
-- Name: FUNCTION recon_window(p_run bigint, p_days integer, p_grace_hours integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.recon_window(p_run bigint, p_days integer, p_grace_hours integer) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.recon_window(p_run bigint, p_days integer, p_grace_hours integer) TO mt5credit_recon;


--
-- Name: FUNCTION refund_absent(p_id bigint, p_attempt integer, p_sender text, p_detail jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.refund_absent(p_id bigint, p_attempt integer, p_sender text, p_detail jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.refund_absent(p_id bigint, p_attempt integer, p_sender text, p_detail jsonb) TO mt5credit_worker;


--
-- Name: FUNCTION refund_answered(p_id bigint, p_attempt integer, p_from text, p_refund_id text, p_status text, p_failure_code text, p_failure_message text, p_sender text, p_detail jsonb, p_recheck_seconds integer, p_watch_seconds integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.refund_answered(p_id bigint, p_attempt integer, p_from text, p_refund_id text, p_status text, p_failure_code text, p_failure_message text, p_sender text, p_detail jsonb, p_recheck_seconds integer, p_watch_seconds integer) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.refund_answered(p_id bigint, p_attempt integer, p_from text, p_refund_id text, p_status text, p_failure_code text, p_failure_message text, p_sender text, p_detail jsonb, p_recheck_seconds integer, p_watch_seconds integer) TO mt5credit_worker;


--
-- Name: FUNCTION refund_card_hint(p_id bigint, p_hint text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.refund_card_hint(p_id bigint, p_hint text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.refund_card_hint(p_id bigint, p_hint text) TO mt5credit_worker;


--
-- Name: FUNCTION refund_check_due(p_provider text, p_margin_seconds integer, p_lookup_seconds integer, p_limit integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.refund_check_due(p_provider text, p_margin_seconds integer, p_lookup_seconds integer, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.refund_check_due(p_provider text, p_margin_seconds integer, p_lookup_seconds integer, p_limit integer) TO mt5credit_worker;


--
-- Name: FUNCTION refund_check_failed(p_id bigint, p_attempt integer, p_case_kind text, p_why text, p_backoff_seconds integer, p_max_lookups integer, p_sender text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.refund_check_failed(p_id bigint, p_attempt integer, p_case_kind text, p_why text, p_backoff_seconds integer, p_max_lookups integer, p_sender text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.refund_check_failed(p_id bigint, p_attempt integer, p_case_kind text, p_why text, p_backoff_seconds integer, p_max_lookups integer, p_sender text) TO mt5credit_worker;


--
-- Name: FUNCTION refund_claim(p_provider text, p_sender text, p_lease_seconds integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.refund_claim(p_provider text, p_sender text, p_lease_seconds integer) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.refund_claim(p_provider text, p_sender text, p_lease_seconds integer) TO mt5credit_worker;


--
-- Name: FUNCTION refund_declined(p_id bigint, p_attempt integer, p_failure_code text, p_failure_message text, p_sender text, p_detail jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.refund_declined(p_id bigint, p_attempt integer, p_failure_code text, p_failure_message text, p_sender text, p_detail jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.refund_declined(p_id bigint, p_attempt integer, p_failure_code text, p_failure_message text, p_sender text, p_detail jsonb) TO mt5credit_worker;


--
-- Name: FUNCTION refund_failed_case(r mt5credit.withdrawal_refund); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.refund_failed_case(r mt5credit.withdrawal_refund) FROM PUBLIC;


--
-- Name: FUNCTION refund_item_of(p_id bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.refund_item_of(p_id bigint) FROM PUBLIC;


--
-- Name: FUNCTION refund_sweep(p_sender text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.refund_sweep(p_sender text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.refund_sweep(p_sender text) TO mt5credit_worker;


--
-- Name: FUNCTION refund_unsent(p_id bigint, p_attempt integer, p_to text, p_sender text, p_detail jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.refund_unsent(p_id bigint, p_attempt integer, p_to text, p_sender text, p_detail jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.refund_unsent(p_id bigint, p_attempt integer, p_to text, p_sender text, p_detail jsonb) TO mt5credit_worker;


--
-- Name: FUNCTION refuse_change(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.refuse_change() FROM PUBLIC;


--
-- Name: FUNCTION register_account(p_client_id text, p_mt5_server text, p_mt5_login bigint, p_currency text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.register_account(p_client_id text, p_mt5_server text, p_mt5_login bigint, p_currency text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.register_account(p_client_id text, p_mt5_server text, p_mt5_login bigint, p_currency text) TO mt5credit_portal;


--
-- Name: FUNCTION resolve_absent(p_id bigint, p_attempt integer, p_worker text, p_detail jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.resolve_absent(p_id bigint, p_attempt integer, p_worker text, p_detail jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.resolve_absent(p_id bigint, p_attempt integer, p_worker text, p_detail jsonb) TO mt5credit_worker;


--
-- Name: FUNCTION resolve_claim(p_servers text[], p_margin_seconds integer, p_lookup_seconds integer, p_limit integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.resolve_claim(p_servers text[], p_margin_seconds integer, p_lookup_seconds integer, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.resolve_claim(p_servers text[], p_margin_seconds integer, p_lookup_seconds integer, p_limit integer) TO mt5credit_worker;


--
-- Name: FUNCTION resolve_found(p_id bigint, p_attempt integer, p_ticket bigint, p_worker text, p_detail jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.resolve_found(p_id bigint, p_attempt integer, p_ticket bigint, p_worker text, p_detail jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.resolve_found(p_id bigint, p_attempt integer, p_ticket bigint, p_worker text, p_detail jsonb) TO mt5credit_worker;


--
-- Name: FUNCTION resolve_unresolved(p_id bigint, p_attempt integer, p_case_kind text, p_worker text, p_detail jsonb, p_retry_seconds integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.resolve_unresolved(p_id bigint, p_attempt integer, p_case_kind text, p_worker text, p_detail jsonb, p_retry_seconds integer) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.resolve_unresolved(p_id bigint, p_attempt integer, p_case_kind text, p_worker text, p_detail jsonb, p_retry_seconds integer) TO mt5credit_worker;


--
-- Name: FUNCTION retention_redact(p_days integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.retention_redact(p_days integer) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.retention_redact(p_days integer) TO mt5credit_retention;


--
-- Name: FUNCTION reversal_check(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.reversal_check() FROM PUBLIC;


--
-- Name: FUNCTION rewind_begin(p_worker text, p_lease_seconds integer, p_detail jsonb, p_kind text, p_severity text, OUT rewind_id bigint, OUT credits integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.rewind_begin(p_worker text, p_lease_seconds integer, p_detail jsonb, p_kind text, p_severity text, OUT rewind_id bigint, OUT credits integer) FROM PUBLIC;


--
-- Name: FUNCTION rewind_recover(p_rewind bigint, p_lost_from timestamp with time zone, p_worker text, p_severity text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.rewind_recover(p_rewind bigint, p_lost_from timestamp with time zone, p_worker text, p_severity text) FROM PUBLIC;


--
-- Name: FUNCTION risk_check(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.risk_check() FROM PUBLIC;


--
-- Name: FUNCTION risk_facts(p_provider text, p_type text, p_body jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.risk_facts(p_provider text, p_type text, p_body jsonb) FROM PUBLIC;


--
-- Name: FUNCTION risk_facts_wanted(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.risk_facts_wanted() FROM PUBLIC;


--
-- Name: FUNCTION risk_limit_text(p_minor bigint, p_count integer, p_volume bigint, p_currency text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.risk_limit_text(p_minor bigint, p_count integer, p_volume bigint, p_currency text) FROM PUBLIC;


--
-- Name: FUNCTION risk_rule_change_guard(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.risk_rule_change_guard() FROM PUBLIC;


--
-- Name: FUNCTION risk_rule_changes(p_limit integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.risk_rule_changes(p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.risk_rule_changes(p_limit integer) TO mt5credit_operator;
GRANT ALL ON FUNCTION mt5credit.risk_rule_changes(p_limit integer) TO mt5credit_reader;


--
-- Name: FUNCTION risk_rule_decide(p_change bigint, p_decision text, p_note text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.risk_rule_decide(p_change bigint, p_decision text, p_note text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.risk_rule_decide(p_change bigint, p_decision text, p_note text) TO mt5credit_operator;


--
-- Name: FUNCTION risk_rule_propose(p_rule text, p_currency text, p_provider text, p_limit text, p_remove boolean, p_note text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.risk_rule_propose(p_rule text, p_currency text, p_provider text, p_limit text, p_remove boolean, p_note text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.risk_rule_propose(p_rule text, p_currency text, p_provider text, p_limit text, p_remove boolean, p_note text) TO mt5credit_operator;


--
-- Name: FUNCTION risk_rules(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.risk_rules() FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.risk_rules() TO mt5credit_operator;
GRANT ALL ON FUNCTION mt5credit.risk_rules() TO mt5credit_reader;


--
-- Name: FUNCTION risk_trip(r mt5credit.risk_rule, p_observed numeric, p_detail jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.risk_trip(r mt5credit.risk_rule, p_observed numeric, p_detail jsonb) FROM PUBLIC;


--
-- Name: FUNCTION risk_value(p jsonb, p_max integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.risk_value(p jsonb, p_max integer) FROM PUBLIC;


--
-- Name: FUNCTION rule_facts(p_payload text, p_type text, p_body jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.rule_facts(p_payload text, p_type text, p_body jsonb) FROM PUBLIC;


--
-- Name: FUNCTION set_actor(p_actor text, p_detail jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.set_actor(p_actor text, p_detail jsonb) FROM PUBLIC;


--
-- Name: FUNCTION settle_refused(p_id bigint, p_attempt integer, p_ticket bigint, p_worker text, p_detail jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.settle_refused(p_id bigint, p_attempt integer, p_ticket bigint, p_worker text, p_detail jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.settle_refused(p_id bigint, p_attempt integer, p_ticket bigint, p_worker text, p_detail jsonb) TO mt5credit_worker;


--
-- Name: TABLE money_proposal; Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

GRANT SELECT ON TABLE mt5credit.money_proposal TO mt5credit_audit;


--
-- Name: FUNCTION settle_request(p_credit bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.settle_request(p_credit bigint) FROM PUBLIC;


--
-- Name: FUNCTION settle_request_held(p_id bigint, p_attempt integer, p_ticket bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.settle_request_held(p_id bigint, p_attempt integer, p_ticket bigint) FROM PUBLIC;


--
-- Name: FUNCTION settle_verified(p_id bigint, p_attempt integer, p_ticket bigint, p_worker text, p_detail jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.settle_verified(p_id bigint, p_attempt integer, p_ticket bigint, p_worker text, p_detail jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.settle_verified(p_id bigint, p_attempt integer, p_ticket bigint, p_worker text, p_detail jsonb) TO mt5credit_worker;


--
-- Name: FUNCTION status_facts(p_provider text, p_type text, p_body jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.status_facts(p_provider text, p_type text, p_body jsonb) FROM PUBLIC;


--
-- Name: FUNCTION step_up_digest(p_action text, VARIADIC p_args text[]); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.step_up_digest(p_action text, VARIADIC p_args text[]) FROM PUBLIC;


--
-- Name: FUNCTION step_up_locked_until(p_tries regclass); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.step_up_locked_until(p_tries regclass) FROM PUBLIC;


--
-- Name: FUNCTION step_up_needed(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.step_up_needed() FROM PUBLIC;


--
-- Name: FUNCTION step_up_refuse(p_action text, p_digest text, p_reason text, p_detail text, p_tries_left integer, p_locked_until timestamp with time zone); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.step_up_refuse(p_action text, p_digest text, p_reason text, p_detail text, p_tries_left integer, p_locked_until timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION step_up_require(p_action text, VARIADIC p_args text[]); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.step_up_require(p_action text, VARIADIC p_args text[]) FROM PUBLIC;


--
-- Name: FUNCTION step_up_spend(p_tries regclass); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.step_up_spend(p_tries regclass) FROM PUBLIC;


--
-- Name: FUNCTION step_up_tries_left(p_tries regclass); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.step_up_tries_left(p_tries regclass) FROM PUBLIC;


--
-- Name: FUNCTION step_up_verify(p_code text, p_action text, VARIADIC p_args text[]); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.step_up_verify(p_code text, p_action text, VARIADIC p_args text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.step_up_verify(p_code text, p_action text, VARIADIC p_args text[]) TO mt5credit_operator;


--
-- Name: FUNCTION stripe_facts(p_type text, p_body jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.stripe_facts(p_type text, p_body jsonb) FROM PUBLIC;


--
-- Name: FUNCTION stripe_leg_fact(r jsonb, p_payment jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.stripe_leg_fact(r jsonb, p_payment jsonb) FROM PUBLIC;


--
-- Name: FUNCTION sweep_expired_leases(p_worker text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.sweep_expired_leases(p_worker text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.sweep_expired_leases(p_worker text) TO mt5credit_worker;


--
-- Name: FUNCTION timeline_check(p_worker text, p_lease_seconds integer, OUT system_identifier text, OUT timeline integer, OUT known_timeline integer, OUT rewind_id bigint, OUT credits integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.timeline_check(p_worker text, p_lease_seconds integer, OUT system_identifier text, OUT timeline integer, OUT known_timeline integer, OUT rewind_id bigint, OUT credits integer) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.timeline_check(p_worker text, p_lease_seconds integer, OUT system_identifier text, OUT timeline integer, OUT known_timeline integer, OUT rewind_id bigint, OUT credits integer) TO mt5credit_worker;


--
-- Name: FUNCTION totp_code(p_secret bytea, p_step bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.totp_code(p_secret bytea, p_step bigint) FROM PUBLIC;


--
-- Name: FUNCTION totp_hmac_sha1(p_key bytea, p_msg bytea); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.totp_hmac_sha1(p_key bytea, p_msg bytea) FROM PUBLIC;


--
-- Name: FUNCTION totp_new_secret(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.totp_new_secret() FROM PUBLIC;


--
-- Name: FUNCTION totp_uri(p_person text, p_secret bytea); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.totp_uri(p_person text, p_secret bytea) FROM PUBLIC;


--
-- Name: FUNCTION uri_component(p text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.uri_component(p text) FROM PUBLIC;


--
-- Name: FUNCTION webhook_event_conflict_guard(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.webhook_event_conflict_guard() FROM PUBLIC;


--
-- Name: FUNCTION webhook_event_guard(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.webhook_event_guard() FROM PUBLIC;


--
-- Name: FUNCTION webhook_malformed_guard(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.webhook_malformed_guard() FROM PUBLIC;


--
-- Name: TABLE withdrawal; Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

GRANT SELECT ON TABLE mt5credit.withdrawal TO mt5credit_audit;


--
-- Name: FUNCTION withdrawal_amend(p_client_id text, p_reference text, p_amount_minor bigint, p_destination text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.withdrawal_amend(p_client_id text, p_reference text, p_amount_minor bigint, p_destination text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.withdrawal_amend(p_client_id text, p_reference text, p_amount_minor bigint, p_destination text) TO mt5credit_portal;


--
-- Name: FUNCTION withdrawal_amount_trips(w mt5credit.withdrawal, p_hold integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.withdrawal_amount_trips(w mt5credit.withdrawal, p_hold integer) FROM PUBLIC;


--
-- Name: FUNCTION withdrawal_approve(p_reference text, p_digest text, p_note text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.withdrawal_approve(p_reference text, p_digest text, p_note text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.withdrawal_approve(p_reference text, p_digest text, p_note text) TO mt5credit_operator;


--
-- Name: FUNCTION withdrawal_case_decide(p mt5credit.money_proposal, p_decision text, p_note text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.withdrawal_case_decide(p mt5credit.money_proposal, p_decision text, p_note text) FROM PUBLIC;


--
-- Name: FUNCTION withdrawal_case_propose(c mt5credit."case", p_action text, p_note text, p_evidence jsonb); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.withdrawal_case_propose(c mt5credit."case", p_action text, p_note text, p_evidence jsonb) FROM PUBLIC;


--
-- Name: FUNCTION withdrawal_client_view(w mt5credit.withdrawal); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.withdrawal_client_view(w mt5credit.withdrawal) FROM PUBLIC;


--
-- Name: FUNCTION withdrawal_debit_after_rewind(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.withdrawal_debit_after_rewind() FROM PUBLIC;


--
-- Name: FUNCTION withdrawal_enqueue_debit(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.withdrawal_enqueue_debit() FROM PUBLIC;


--
-- Name: FUNCTION withdrawal_guard(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.withdrawal_guard() FROM PUBLIC;


--
-- Name: FUNCTION withdrawal_held_for_grows(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.withdrawal_held_for_grows() FROM PUBLIC;


--
-- Name: FUNCTION withdrawal_hold_current(c mt5credit."case", w mt5credit.withdrawal); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.withdrawal_hold_current(c mt5credit."case", w mt5credit.withdrawal) FROM PUBLIC;


--
-- Name: FUNCTION withdrawal_on_hold(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.withdrawal_on_hold() FROM PUBLIC;


--
-- Name: FUNCTION withdrawal_payable(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.withdrawal_payable() FROM PUBLIC;


--
-- Name: FUNCTION withdrawal_plan(p_withdrawal bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.withdrawal_plan(p_withdrawal bigint) FROM PUBLIC;


--
-- Name: FUNCTION withdrawal_plan_digest(p_withdrawal bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.withdrawal_plan_digest(p_withdrawal bigint) FROM PUBLIC;


--
-- Name: FUNCTION withdrawal_plan_guard(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.withdrawal_plan_guard() FROM PUBLIC;


--
-- Name: FUNCTION withdrawal_plan_show(p_reference text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.withdrawal_plan_show(p_reference text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.withdrawal_plan_show(p_reference text) TO mt5credit_operator;
GRANT ALL ON FUNCTION mt5credit.withdrawal_plan_show(p_reference text) TO mt5credit_reader;


--
-- Name: FUNCTION withdrawal_prepare(p_reference text, p_note text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.withdrawal_prepare(p_reference text, p_note text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.withdrawal_prepare(p_reference text, p_note text) TO mt5credit_operator;


--
-- Name: FUNCTION withdrawal_progress(p_client_id text, p_reference text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.withdrawal_progress(p_client_id text, p_reference text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.withdrawal_progress(p_client_id text, p_reference text) TO mt5credit_portal;


--
-- Name: FUNCTION withdrawal_progress_legs(p_client_id text, p_reference text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.withdrawal_progress_legs(p_client_id text, p_reference text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.withdrawal_progress_legs(p_client_id text, p_reference text) TO mt5credit_portal;


--
-- Name: FUNCTION withdrawal_queue(p_status text, p_limit integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.withdrawal_queue(p_status text, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.withdrawal_queue(p_status text, p_limit integer) TO mt5credit_operator;
GRANT ALL ON FUNCTION mt5credit.withdrawal_queue(p_status text, p_limit integer) TO mt5credit_reader;


--
-- Name: FUNCTION withdrawal_refund_guard_and_log(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.withdrawal_refund_guard_and_log() FROM PUBLIC;


--
-- Name: FUNCTION withdrawal_reject(p_reference text, p_note text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.withdrawal_reject(p_reference text, p_note text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.withdrawal_reject(p_reference text, p_note text) TO mt5credit_operator;


--
-- Name: FUNCTION withdrawal_request(p_client_id text, p_idempotency_key text, p_provider text, p_mt5_server text, p_mt5_login bigint, p_amount_minor bigint, p_currency text, p_destination text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.withdrawal_request(p_client_id text, p_idempotency_key text, p_provider text, p_mt5_server text, p_mt5_login bigint, p_amount_minor bigint, p_currency text, p_destination text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.withdrawal_request(p_client_id text, p_idempotency_key text, p_provider text, p_mt5_server text, p_mt5_login bigint, p_amount_minor bigint, p_currency text, p_destination text) TO mt5credit_portal;


--
-- Name: FUNCTION withdrawal_risk_check(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.withdrawal_risk_check() FROM PUBLIC;


--
-- Name: FUNCTION withdrawal_show(p_reference text); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.withdrawal_show(p_reference text) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.withdrawal_show(p_reference text) TO mt5credit_operator;
GRANT ALL ON FUNCTION mt5credit.withdrawal_show(p_reference text) TO mt5credit_reader;


--
-- Name: FUNCTION withdrawal_trading_due(p_servers text[], p_limit integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.withdrawal_trading_due(p_servers text[], p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.withdrawal_trading_due(p_servers text[], p_limit integer) TO mt5credit_worker;


--
-- Name: FUNCTION withdrawal_trading_record(p_withdrawal bigint, p_after_ticket bigint, p_volume bigint, p_deals integer, p_from bigint, p_to bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.withdrawal_trading_record(p_withdrawal bigint, p_after_ticket bigint, p_volume bigint, p_deals integer, p_from bigint, p_to bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.withdrawal_trading_record(p_withdrawal bigint, p_after_ticket bigint, p_volume bigint, p_deals integer, p_from bigint, p_to bigint) TO mt5credit_worker;


--
-- Name: FUNCTION witness_pick(p_servers text[], p_limit integer); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.witness_pick(p_servers text[], p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.witness_pick(p_servers text[], p_limit integer) TO mt5credit_worker;


--
-- Name: FUNCTION witness_still_pending(p_ids bigint[], p_attempts integer[]); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.witness_still_pending(p_ids bigint[], p_attempts integer[]) FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.witness_still_pending(p_ids bigint[], p_attempts integer[]) TO mt5credit_worker;


--
-- Name: FUNCTION work_item_of(p_id bigint); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.work_item_of(p_id bigint) FROM PUBLIC;


--
-- Name: FUNCTION work_status(); Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

REVOKE ALL ON FUNCTION mt5credit.work_status() FROM PUBLIC;
GRANT ALL ON FUNCTION mt5credit.work_status() TO mt5credit_worker;
GRANT ALL ON FUNCTION mt5credit.work_status() TO mt5credit_reader;
GRANT ALL ON FUNCTION mt5credit.work_status() TO mt5credit_operator;


--
-- Name: TABLE case_action; Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

GRANT SELECT ON TABLE mt5credit.case_action TO mt5credit_audit;


--
-- Name: TABLE client_name; Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

GRANT SELECT ON TABLE mt5credit.client_name TO mt5credit_audit;


--
-- Name: TABLE credit_history; Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

GRANT SELECT ON TABLE mt5credit.credit_history TO mt5credit_audit;


--
-- Name: TABLE currency; Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

GRANT SELECT ON TABLE mt5credit.currency TO mt5credit_portal;
GRANT SELECT ON TABLE mt5credit.currency TO mt5credit_worker;
GRANT SELECT ON TABLE mt5credit.currency TO mt5credit_operator;
GRANT SELECT ON TABLE mt5credit.currency TO mt5credit_reader;
GRANT SELECT ON TABLE mt5credit.currency TO mt5credit_recon;


--
-- Name: TABLE deposit_history; Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

GRANT SELECT ON TABLE mt5credit.deposit_history TO mt5credit_audit;


--
-- Name: TABLE journal; Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

GRANT SELECT ON TABLE mt5credit.journal TO mt5credit_audit;


--
-- Name: TABLE payout_currency; Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

GRANT SELECT ON TABLE mt5credit.payout_currency TO mt5credit_portal;
GRANT SELECT ON TABLE mt5credit.payout_currency TO mt5credit_operator;
GRANT SELECT ON TABLE mt5credit.payout_currency TO mt5credit_reader;


--
-- Name: TABLE payout_history; Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

GRANT SELECT ON TABLE mt5credit.payout_history TO mt5credit_audit;


--
-- Name: TABLE recon_clock; Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

GRANT SELECT ON TABLE mt5credit.recon_clock TO mt5credit_recon;
GRANT SELECT ON TABLE mt5credit.recon_clock TO mt5credit_reader;
GRANT SELECT ON TABLE mt5credit.recon_clock TO mt5credit_operator;


--
-- Name: TABLE recon_control_in; Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

GRANT INSERT ON TABLE mt5credit.recon_control_in TO mt5credit_recon;


--
-- Name: TABLE recon_count; Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

GRANT SELECT ON TABLE mt5credit.recon_count TO mt5credit_recon;
GRANT SELECT ON TABLE mt5credit.recon_count TO mt5credit_reader;
GRANT SELECT ON TABLE mt5credit.recon_count TO mt5credit_operator;


--
-- Name: TABLE recon_deal_in; Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

GRANT INSERT ON TABLE mt5credit.recon_deal_in TO mt5credit_recon;


--
-- Name: TABLE recon_item; Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

GRANT SELECT ON TABLE mt5credit.recon_item TO mt5credit_recon;
GRANT SELECT ON TABLE mt5credit.recon_item TO mt5credit_reader;
GRANT SELECT ON TABLE mt5credit.recon_item TO mt5credit_operator;


--
-- Name: TABLE recon_matched_later; Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

GRANT SELECT ON TABLE mt5credit.recon_matched_later TO mt5credit_recon;
GRANT SELECT ON TABLE mt5credit.recon_matched_later TO mt5credit_reader;
GRANT SELECT ON TABLE mt5credit.recon_matched_later TO mt5credit_operator;


--
-- Name: TABLE recon_paired_ahead; Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

GRANT SELECT ON TABLE mt5credit.recon_paired_ahead TO mt5credit_recon;
GRANT SELECT ON TABLE mt5credit.recon_paired_ahead TO mt5credit_reader;
GRANT SELECT ON TABLE mt5credit.recon_paired_ahead TO mt5credit_operator;


--
-- Name: TABLE recon_report; Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

GRANT SELECT ON TABLE mt5credit.recon_report TO mt5credit_reader;
GRANT SELECT ON TABLE mt5credit.recon_report TO mt5credit_operator;


--
-- Name: TABLE recon_settlement_in; Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

GRANT INSERT ON TABLE mt5credit.recon_settlement_in TO mt5credit_recon;


--
-- Name: TABLE recon_transit_credit; Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

GRANT SELECT ON TABLE mt5credit.recon_transit_credit TO mt5credit_recon;
GRANT SELECT ON TABLE mt5credit.recon_transit_credit TO mt5credit_reader;
GRANT SELECT ON TABLE mt5credit.recon_transit_credit TO mt5credit_operator;


--
-- Name: TABLE recon_transit_settlement; Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

GRANT SELECT ON TABLE mt5credit.recon_transit_settlement TO mt5credit_recon;
GRANT SELECT ON TABLE mt5credit.recon_transit_settlement TO mt5credit_reader;
GRANT SELECT ON TABLE mt5credit.recon_transit_settlement TO mt5credit_operator;


--
-- Name: TABLE risk_rule_change; Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

GRANT SELECT ON TABLE mt5credit.risk_rule_change TO mt5credit_audit;


--
-- Name: TABLE webhook_malformed; Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

GRANT SELECT ON TABLE mt5credit.webhook_malformed TO mt5credit_operator;
GRANT SELECT ON TABLE mt5credit.webhook_malformed TO mt5credit_reader;


--
-- Name: TABLE withdrawal_refund_history; Type: ACL; Schema: mt5credit; Owner: mt5credit_owner
--

GRANT SELECT ON TABLE mt5credit.withdrawal_refund_history TO mt5credit_audit;


--
-- PostgreSQL database dump complete
--

