-- migrate: as-migrator
--
-- 065: a second person needs a second factor (issue 29, item 5).
--
-- The console logs in once (052), as a login that is a member of every
-- person's role, and acts for a person by setting that role (063).  Its
-- credentials were therefore every person: with them alone, SET ROLE
-- carol; withdrawal_prepare(...); SET ROLE dave; withdrawal_approve(...)
-- was an approval by two people.  From here, a decision that moves money,
-- taken through a set role, also needs that person's one-time code:
--
--   1. Each person may have a TOTP secret (RFC 6238: HMAC-SHA1, 30 s
--      steps, 6 digits, what authenticator apps use) in person_totp, a
--      table no role but its owner can read.  A person admin
--      (mt5credit_person_admin, 063) or the person themselves enrols it at
--      their own login, never through a set role: `mt5credit persons
--      enrol ann` shows the otpauth:// URI once, as a QR code.
--   2. The console's action carries the code ("code": "123456").
--      console_act() verifies it with step_up_verify() over the action's
--      digest (the person, the action, its ids and amounts) before it
--      calls the desk's function.  A right code records a row in
--      person_step_up: person, step, digest, this transaction.  A step is
--      used once per person: a code already used, or one older than the
--      newest used, is refused (a replay fails).
--   3. The five functions that take a person's part in moving money
--      (case_propose, case_propose_settle_done, case_decide 'approve',
--      withdrawal_prepare, withdrawal_approve) call step_up_require(),
--      which consumes that row for this person, this action's digest and
--      this transaction, or refuses (MC140).  So a code verified for one
--      action cannot serve another, nor another transaction, and only
--      step_up_verify() can make the row.  A person with no enrolment
--      cannot do these through the console at all.
--   4. At a person's own login (no role set: the CLI) nothing changes:
--      the login is that person's own credential.  A console login is
--      never that path, even were it misconfigured to inherit.
--
-- Wrong codes are limited in the database, where the console cannot lose
-- the count: a person has five tries; a wrong or used code spends one,
-- and one comes back every 15 minutes; with none left, step-up is locked
-- until one has (at most 5 + 96 guesses a day: about 1 in 3,500 of
-- finding a code in a day of trying, and the person sees "locked" the
-- first time they need a code).  Whoever holds the console's credentials
-- controls their transactions: a count they could roll back would count
-- nothing.  So the tries live in a sequence per person (setval() is not
-- undone by a rollback), and a refusal is also recorded in
-- person_step_up_refusal, which the console's path commits: console_act()
-- answers a refused code with a result, not an error,
--   {"error": "second_factor", "reason": "no_code" | "not_enrolled" |
--    "wrong_code" | "code_used" | "locked", "detail": "...",
--    "action": "...", "tries_left": n, "locked_until": "..." | null}
-- whose text begins with {"error": "second_factor" (jsonb orders keys by
-- length, then bytes; no other key of it is as short): the edge answers
-- it 403.
--
-- HMAC-SHA1 and the secret's random bytes are pgcrypto's (trusted, in
-- PostgreSQL's contrib: Debian's postgresql-15 ships it).  The migrator
-- creates it in a schema of its own unless it is there already; a
-- migrator that may not create it needs a superuser to run
-- CREATE EXTENSION pgcrypto first.
--
-- Re-declared, this file holds their current definitions:
--   case_propose()             (053)
--   case_decide()              (053): and its refusal of one's own
--                              proposal says "cannot approve it" (053's
--                              said "cannot approves it")
--   case_propose_settle_done() (053)
--   withdrawal_approve()       (053)
--   withdrawal_prepare()       (053)
--   console_whoami()           (054): and "second_factor"
--   console_act()              (059): and the code
--


-- 1. pgcrypto, and the two things taken from it, named once.

DO $crypto$
DECLARE
    v_schema  text;
BEGIN
    SELECT n.nspname INTO v_schema
    FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
    WHERE e.extname = 'pgcrypto';

    IF v_schema IS NULL THEN
        CREATE SCHEMA IF NOT EXISTS mt5credit_crypto;
        REVOKE ALL ON SCHEMA mt5credit_crypto FROM PUBLIC;
        CREATE EXTENSION pgcrypto WITH SCHEMA mt5credit_crypto;
        v_schema := 'mt5credit_crypto';
    END IF;

    EXECUTE format('GRANT USAGE ON SCHEMA %I TO mt5credit_owner', v_schema);

    EXECUTE format($f$
        CREATE FUNCTION mt5credit.totp_hmac_sha1(p_key bytea, p_msg bytea)
        RETURNS bytea
        LANGUAGE sql IMMUTABLE STRICT
        SET search_path = pg_catalog, pg_temp
        AS 'SELECT %I.hmac(p_msg, p_key, ''sha1'')'
        $f$, v_schema);

    EXECUTE format($f$
        CREATE FUNCTION mt5credit.totp_new_secret()
        RETURNS bytea
        LANGUAGE sql VOLATILE
        SET search_path = pg_catalog, pg_temp
        AS 'SELECT %I.gen_random_bytes(20)'
        $f$, v_schema);
END
$crypto$;

ALTER FUNCTION mt5credit.totp_hmac_sha1(bytea, bytea) OWNER TO mt5credit_owner;
ALTER FUNCTION mt5credit.totp_new_secret() OWNER TO mt5credit_owner;
REVOKE ALL ON FUNCTION mt5credit.totp_hmac_sha1(bytea, bytea),
    mt5credit.totp_new_secret() FROM PUBLIC;

SET ROLE mt5credit_owner;


-- 2. The secrets.  Keyed by the person's role (its OID, as 063's
-- console_identity): a renamed role keeps its enrolment; a dropped one's
-- row names nobody (every lookup goes through pg_roles).  Nothing is
-- granted on it: only the SECURITY DEFINER functions below read it.
CREATE TABLE mt5credit.person_totp (
    person       oid          PRIMARY KEY,
    -- 160 bits, RFC 4226's length for HMAC-SHA1
    secret       bytea        NOT NULL CHECK (octet_length(secret) = 20),
    enrolled_by  text         NOT NULL,
    enrolled_at  timestamptz  NOT NULL,
    -- the newest 30-second step a code was used for: only a later one is
    -- taken (0: none yet)
    last_step    bigint       NOT NULL DEFAULT 0 CHECK (last_step >= 0),
    -- the tries (section 4): a sequence of this person's, which a
    -- rollback does not undo
    tries        regclass     NOT NULL UNIQUE
);

COMMENT ON TABLE mt5credit.person_totp IS
    'each person''s TOTP secret for step-up (065); no role may read it, '
    'only step_up_verify() and the enrolment functions';

-- who enrolled whom, and when: kept across resets
CREATE TABLE mt5credit.person_totp_history (
    id           bigint       GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    person       oid          NOT NULL,
    person_name  text         NOT NULL,
    action       text         NOT NULL CHECK (action IN ('enrol', 'reset')),
    actor        text         NOT NULL,
    at           timestamptz  NOT NULL DEFAULT clock_timestamp()
);

-- A verified code, bound to one action of one transaction.  A step is
-- one person's once: the key refuses a second use even where last_step
-- would not.  used_at: the desk's function consumed it.
CREATE TABLE mt5credit.person_step_up (
    person       text         NOT NULL,
    step         bigint       NOT NULL CHECK (step > 0),
    action       text         NOT NULL,
    digest       text         NOT NULL CHECK (digest ~ '^[0-9a-f]{64}$'),
    xact         xid8         NOT NULL,
    at           timestamptz  NOT NULL DEFAULT clock_timestamp(),
    used_at      timestamptz  CHECK (used_at >= at),
    PRIMARY KEY (person, step)
);

-- Every refused code the console's path committed: who, for what, why.
CREATE TABLE mt5credit.person_step_up_refusal (
    id            bigint       GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    person        text         NOT NULL,
    action        text         NOT NULL,
    digest        text         NOT NULL CHECK (digest ~ '^[0-9a-f]{64}$'),
    reason        text         NOT NULL
                  CHECK (reason IN ('no_code', 'not_enrolled', 'wrong_code',
                                    'code_used', 'locked')),
    tries_left    integer      CHECK (tries_left BETWEEN 0 AND 5),
    locked_until  timestamptz,
    at            timestamptz  NOT NULL DEFAULT clock_timestamp(),
    -- no try left: until when; locked: none was left
    CHECK ((locked_until IS NOT NULL) = (tries_left IS NOT DISTINCT FROM 0)),
    CHECK (reason <> 'locked' OR tries_left = 0)
);


-- 3. TOTP, as RFC 6238 computes it, and the URI authenticator apps read.

-- the code of one 30-second step: HMAC-SHA1 over the step as 8 bytes,
-- big-endian; RFC 4226's dynamic truncation; 6 digits
CREATE FUNCTION mt5credit.totp_code(p_secret bytea, p_step bigint)
RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT
SET search_path = mt5credit, pg_temp
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

-- RFC 4648 base32, unpadded: how otpauth:// carries the secret
CREATE FUNCTION mt5credit.base32(p bytea)
RETURNS text
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

-- a URI component: unreserved characters kept, every other byte %XX
CREATE FUNCTION mt5credit.uri_component(p text)
RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT
AS $$
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
$$;

CREATE FUNCTION mt5credit.totp_uri(p_person text, p_secret bytea)
RETURNS text
LANGUAGE sql STABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT 'otpauth://totp/'
           || uri_component('mt5-credit:' || p_person || '@'
                            || current_database())
           || '?secret=' || base32(p_secret)
           || '&issuer=mt5-credit&algorithm=SHA1&digits=6&period=30'
$$;


-- 4. The tries: five, one back every 15 minutes.  The sequence holds the
-- epoch second (whole seconds throughout) at which all five are back; a wrong code moves it 15
-- minutes on from now or from where it was, whichever is later.  Tries
-- left: five less the quarters of an hour still to run, rounded up.
CREATE FUNCTION mt5credit.step_up_tries_left(p_tries regclass)
RETURNS integer
LANGUAGE sql STABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT greatest(0, 5 - ceil(greatest(0,
               coalesce(pg_sequence_last_value(p_tries), 0)
               - floor(extract(epoch FROM clock_timestamp()))) / 900.0)
                           ::integer)
$$;

-- a try spent, whatever becomes of the transaction
CREATE FUNCTION mt5credit.step_up_spend(p_tries regclass)
RETURNS void
LANGUAGE sql VOLATILE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT setval(p_tries,
                  greatest(coalesce(pg_sequence_last_value(p_tries), 0),
                           floor(extract(epoch FROM clock_timestamp()))
                               ::bigint)
                  + 900)
$$;

-- when the next try comes back
CREATE FUNCTION mt5credit.step_up_locked_until(p_tries regclass)
RETURNS timestamptz
LANGUAGE sql STABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT to_timestamp(coalesce(pg_sequence_last_value(p_tries), 0)
                        - 4 * 900)
$$;


-- 5. An action's digest: the person, the action, its ids and amounts as
-- the desk's function receives them, canonical (a JSON array's text).
CREATE FUNCTION mt5credit.step_up_digest(p_action text,
    VARIADIC p_args text[])
RETURNS text
LANGUAGE sql STABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT encode(sha256(convert_to(
        (jsonb_build_array(person(), p_action) || to_jsonb(p_args))::text,
        'UTF8')), 'hex')
$$;

-- Does this call need a step-up?  Through a set role (the console), yes;
-- at a person's own login, no; a console login never counts as one (a
-- superuser, whom pg_has_role() makes a member of every role, is no
-- console login).
CREATE FUNCTION mt5credit.step_up_needed()
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT current_setting('role') <> 'none'
           OR (pg_has_role(session_user, 'mt5credit_console', 'MEMBER')
               AND NOT (SELECT rolsuper FROM pg_roles
                        WHERE rolname = session_user))
$$;


-- The refusal console_act() answers (and commits: the record stays).
CREATE FUNCTION mt5credit.step_up_refuse(p_action text, p_digest text,
    p_reason text, p_detail text, p_tries_left integer,
    p_locked_until timestamptz)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
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


-- Verify the person's code for one action: NULL when it is right (the
-- step-up is recorded for this transaction), the refusal otherwise.
CREATE FUNCTION mt5credit.step_up_verify(p_code text, p_action text,
    VARIADIC p_args text[])
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
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
$$;

-- Inside the desk's functions: this transaction verified this person's
-- code for this very action, and the verification is spent here.
CREATE FUNCTION mt5credit.step_up_require(p_action text,
    VARIADIC p_args text[])
RETURNS void
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
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

REVOKE ALL ON FUNCTION mt5credit.step_up_verify(text, text, text[])
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mt5credit.step_up_verify(text, text, text[])
    TO mt5credit_operator;


-- 6. Enrolment: at a login of one's own, never through a set role (a
-- console login may set a person admin's role); a person admin for
-- anyone, a person for themselves.  The URI is shown once and kept
-- nowhere but in the person's app.
CREATE FUNCTION mt5credit.person_totp_set(p_person text, p_action text)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
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

CREATE FUNCTION mt5credit.person_totp_enrol(p_person text)
RETURNS text
LANGUAGE sql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$ SELECT person_totp_set(p_person, 'enrol') $$;

CREATE FUNCTION mt5credit.person_totp_reset(p_person text)
RETURNS text
LANGUAGE sql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$ SELECT person_totp_set(p_person, 'reset') $$;

-- who has a second factor, since when, by whom, and their tries: never
-- the secret
CREATE FUNCTION mt5credit.person_totp_list()
RETURNS TABLE (person text, enrolled_by text, enrolled_at timestamptz,
               tries_left integer, locked_until timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT r.rolname::text, t.enrolled_by, t.enrolled_at,
           step_up_tries_left(t.tries),
           CASE WHEN step_up_tries_left(t.tries) = 0
                THEN step_up_locked_until(t.tries) END
    FROM person_totp t JOIN pg_roles r ON r.oid = t.person
    ORDER BY r.rolname
$$;

REVOKE ALL ON FUNCTION mt5credit.person_totp_set(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.person_totp_enrol(text),
    mt5credit.person_totp_reset(text), mt5credit.person_totp_list()
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mt5credit.person_totp_enrol(text),
    mt5credit.person_totp_reset(text)
    TO mt5credit_person_admin, mt5credit_operator;
GRANT EXECUTE ON FUNCTION mt5credit.person_totp_list()
    TO mt5credit_person_admin;


-- 7. Who am I, and do I have a second factor (054's, and that).
CREATE OR REPLACE FUNCTION mt5credit.console_whoami()
RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
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


-- 8. The desk's money functions, each with its step-up just before it
-- records anything (its own refusals come first: nothing to verify).

-- 053's case_propose()
CREATE OR REPLACE FUNCTION mt5credit.case_propose(p_case bigint, p_action text,
    p_credit_id bigint, p_amount text, p_note text, p_evidence jsonb)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    c       "case" := desk_case(p_case);
    v_cr    mt5_credit;
    v_id    bigint;
    v_num   numeric;
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
        -- major units, exactly: 12.345 USD is refused, not rounded
        IF p_amount IS NULL OR p_amount !~ '^[0-9]{1,15}(\.[0-9]{1,8})?$'
        THEN
            RAISE EXCEPTION 'a correction needs an amount like 12.50, '
                            'not "%"', coalesce(p_amount, '')
                USING ERRCODE = 'MC048';
        END IF;
        v_num := major_to_minor(p_amount::numeric, v_cr.currency);
        IF v_num <> trunc(v_num) OR v_num <= 0 THEN
            RAISE EXCEPTION '% is not a positive amount in whole minor '
                            'units of %', p_amount, v_cr.currency
                USING ERRCODE = 'MC048';
        END IF;
        v_amount_minor := v_num::bigint;
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


-- 053's case_decide()
CREATE OR REPLACE FUNCTION mt5credit.case_decide(p_proposal bigint, p_decision text,
    p_note text)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    p       money_proposal;
    c       "case";
    v_cr    mt5_credit;
    v_new   bigint;
    v_rows  integer;
BEGIN
    SELECT * INTO p FROM money_proposal WHERE id = p_proposal FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no proposal %', p_proposal USING ERRCODE = 'MC044';
    END IF;
    c := desk_case(p.case_id);
    IF p.status <> 'proposed' THEN
        RAISE EXCEPTION 'proposal % was already %', p.id, p.status
            USING ERRCODE = 'MC041';
    END IF;
    IF p_decision NOT IN ('approve', 'reject', 'withdraw') THEN
        RAISE EXCEPTION 'decide how? "%"', p_decision USING ERRCODE = 'MC047';
    END IF;
    IF p_decision = 'withdraw' AND p.proposed_by <> mt5credit.person() THEN
        RAISE EXCEPTION 'only % may withdraw proposal %', p.proposed_by, p.id
            USING ERRCODE = 'MC049';
    END IF;
    IF p_decision <> 'withdraw' AND p.proposed_by = mt5credit.person() THEN
        RAISE EXCEPTION 'two-person rule: % proposed this and cannot % it; '
                        'another person must decide', mt5credit.person(),
                        p_decision
            USING ERRCODE = 'MC049';
    END IF;

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


-- 053's case_propose_settle_done()
CREATE OR REPLACE FUNCTION mt5credit.case_propose_settle_done(p_case bigint,
    p_credit_id bigint, p_ticket bigint, p_note text, p_evidence jsonb)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
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


-- 053's withdrawal_approve()
CREATE OR REPLACE FUNCTION mt5credit.withdrawal_approve(p_reference text,
    p_digest text, p_note text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
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


-- 053's withdrawal_prepare()
CREATE OR REPLACE FUNCTION mt5credit.withdrawal_prepare(p_reference text,
    p_note text)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
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


-- 9. 059's console_act(), and the code.  For the five money actions the
-- code is verified over the action as the desk's function will receive
-- it (each value already of that function's type); a refusal is the
-- answer, and is committed with its record (section 4).
--   {"action": "withdrawal_approve", "withdrawal": "wd_000001",
--    "digest": "...", "note": "...", "code": "123456"}
CREATE OR REPLACE FUNCTION mt5credit.console_act(p jsonb)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
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

RESET ROLE;
