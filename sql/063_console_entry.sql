-- migrate: as-migrator
--
-- 063: the console's one door, where no byte of a request becomes SQL text
-- (issue 29).
--
-- Until now the edge built each console request as the text of one simple
-- query, "SET LOCAL ROLE "<person>"; SELECT ...", with the arguments and
-- the person's name formatted into it.  A refusal the handler had already
-- answered still sent a statement, and a name with a quote in it was
-- executed (issue 29, items 1 and 2).  From here the edge sends one fixed
-- statement and every value as a parameter:
--
--   SELECT mt5credit.console_call($1 identity, $2 endpoint, $3 .. $7)
--
-- and console_call() does, in this order, before anything else:
--   1. the identity nginx verified (an SSO id, a certificate's name, a
--      basic-auth user) is mapped to its person by console_identity, a
--      table the console cannot write: one human is one person, whatever
--      names their identity sources give them ("ann" and
--      "ann@example.com" both map to the role ann, so one cannot approve
--      the other's proposal); a name with no row is nobody (MC130);
--   2. that role is set for the rest of the transaction through
--      set_config('role', ..., true), a parameter, never a formatted
--      name; PostgreSQL itself refuses a role the console's login is not
--      a member of (42501);
--   3. console_whoami() (054) runs as that role, so person() (053)
--      refuses a role that is no person (MC093), and a person who may
--      neither read nor act is refused by the grants (42501), on every
--      endpoint, reading ones included (issue 29, item 4);
--   4. only then the endpoint's statement, whose values are PL/pgSQL
--      variables: parameters again.
--
-- The console's pool connects with "-c role=mt5credit_console" (the
-- module adds it), so its statements run as that group, whose only right
-- is this function; at the end of each transaction the person's role is
-- gone.  The edge checks every argument's shape before sending it too:
-- a refusal never reaches PostgreSQL.
--
-- Actions (endpoint "act") are limited per person in the database, which
-- every host serving the console shares: nginx's limit_req runs before
-- authentication, so it cannot key on the person (item 7).
--
-- This file holds the current definition of every console read (they
-- were the edge's statement texts, ngx_mt5_credit_console.c), and of
-- 053's person(), which now refuses a console login acting as itself.
--

DO $roles$
BEGIN
    -- who may map identities to persons (docs/console.md)
    IF NOT EXISTS (SELECT 1 FROM pg_roles
                   WHERE rolname = 'mt5credit_person_admin')
    THEN
        CREATE ROLE mt5credit_person_admin NOLOGIN;
    END IF;
END
$roles$;

COMMENT ON ROLE mt5credit_person_admin IS
    'mt5-credit: maps the names identity sources give to persons (063)';

GRANT USAGE ON SCHEMA mt5credit TO mt5credit_console, mt5credit_person_admin;

SET ROLE mt5credit_owner;


-- Every name an identity source gives, and the one person it is.  The
-- person is a role's OID: a renamed role keeps its names, a dropped one
-- takes them with it (console_person_of() finds no role and refuses).
CREATE TABLE mt5credit.console_identity (
    identity    text        PRIMARY KEY
                CONSTRAINT console_identity_shape
                CHECK (identity ~ '^[^[:cntrl:]]{1,255}$'
                       AND identity = btrim(identity)),
    person      oid         NOT NULL,
    mapped_by   text        NOT NULL DEFAULT session_user,
    mapped_at   timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE mt5credit.console_identity IS
    'the names nginx may give for a person, each mapped to one person''s '
    'role (063); only console_person_of() reads it';

-- who mapped what, kept when a mapping goes
CREATE TABLE mt5credit.console_identity_history (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    identity    text        NOT NULL,
    person      text,
    action      text        NOT NULL CHECK (action IN ('map', 'unmap')),
    actor       text        NOT NULL DEFAULT session_user,
    at          timestamptz NOT NULL DEFAULT now()
);


-- Who is a person: a member of mt5credit_person, through any chain of
-- groups, that is not the group itself and is no console login.  A
-- console login is a member of every person's role, and so of
-- mt5credit_person too: it was a "person" to 053's person(), which let
-- the console SET ROLE to its own login and act as nobody.
CREATE FUNCTION mt5credit.person_is(p_role text)
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT p_role <> 'mt5credit_person'
           AND EXISTS (SELECT 1 FROM pg_roles WHERE rolname = p_role)
           AND pg_has_role(p_role, 'mt5credit_person', 'MEMBER')
           AND NOT pg_has_role(p_role, 'mt5credit_console', 'MEMBER')
$$;

REVOKE ALL ON FUNCTION mt5credit.person_is(text) FROM PUBLIC;


-- 053's person(): a role set by SET ROLE acts only if it is a person as
-- person_is() says
CREATE OR REPLACE FUNCTION mt5credit.person()
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = mt5credit, pg_temp
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


-- The person an identity names, or MC130: no row, or a row whose role is
-- gone or is no longer a person.
CREATE FUNCTION mt5credit.console_person_of(p_identity text)
RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
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

REVOKE ALL ON FUNCTION mt5credit.console_person_of(text) FROM PUBLIC;


-- Actions a person may send: at most 60 in a minute, on every host
-- together.  Refused ones are not counted (the refusal rolls back).
CREATE TABLE mt5credit.console_act_rate (
    person      text        PRIMARY KEY,
    minute      timestamptz NOT NULL,
    actions     integer     NOT NULL CHECK (actions BETWEEN 1 AND 60)
);

CREATE FUNCTION mt5credit.console_act_admit(p_person text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
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

REVOKE ALL ON FUNCTION mt5credit.console_act_admit(text) FROM PUBLIC;


CREATE FUNCTION mt5credit.console_call(p_identity text, p_endpoint text,
    p1 text, p2 text, p3 text, p4 text, p5 text)
RETURNS text
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
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

REVOKE ALL ON FUNCTION mt5credit.console_call(text, text, text, text, text,
    text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mt5credit.console_call(text, text, text, text,
    text, text, text) TO mt5credit_console;
GRANT EXECUTE ON FUNCTION mt5credit.console_person_of(text),
    mt5credit.console_act_admit(text) TO mt5credit_console;


-- Mapping a name to a person, and taking it away, by a person admin at
-- their own login.  Never through a set role: the console's login may
-- set any person's role, and a person may also be a person admin, so
-- the console's credentials would map any name to anyone.
CREATE FUNCTION mt5credit.person_identity_admin()
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = mt5credit, pg_temp
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

REVOKE ALL ON FUNCTION mt5credit.person_identity_admin() FROM PUBLIC;

CREATE FUNCTION mt5credit.person_identity_map(p_identity text,
    p_person text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
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

CREATE FUNCTION mt5credit.person_identity_unmap(p_identity text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
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

CREATE FUNCTION mt5credit.person_identity_list()
RETURNS TABLE (identity text, person text, mapped_by text,
               mapped_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT i.identity, r.rolname::text, i.mapped_by, i.mapped_at
    FROM console_identity i LEFT JOIN pg_roles r ON r.oid = i.person
    ORDER BY r.rolname, i.identity
$$;

REVOKE ALL ON FUNCTION mt5credit.person_identity_map(text, text),
    mt5credit.person_identity_unmap(text),
    mt5credit.person_identity_list() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mt5credit.person_identity_map(text, text),
    mt5credit.person_identity_unmap(text),
    mt5credit.person_identity_list() TO mt5credit_person_admin;

RESET ROLE;
