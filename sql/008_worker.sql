--
-- 008: the credit worker's and the resolver's functions.
--
-- The worker role (mt5credit_worker) can do nothing but call these.  Each
-- moves a credit with one conditional UPDATE on (id, status, attempts):
-- the attempt number is the lease token, so a worker whose lease expired,
-- or a resolver acting on a stale read, changes nothing; the functions
-- return whether their row was changed and the caller reads it.
--
--   claim_credit            pending -> claimed (lease, attempt + 1)
--   credit_release          claimed -> pending (no call was sent)
--   credit_succeeded        claimed -> done (deal ticket)
--   credit_failed           claimed -> failed + a case
--   credit_unknown          claimed -> unknown
--   sweep_expired_leases    claimed past its lease -> unknown
--   resolve_claim           picks unknown credits due for a lookup
--   resolve_found           unknown -> done (deal found by reference)
--   resolve_absent          unknown -> pending (complete answer, no deal)
--   resolve_unresolved      stays unknown + a case (conflict, no answer)
--
-- Times are the database's (now()): every worker shares one clock.

-- the worker may also give back a claim it never acted on
INSERT INTO mt5credit.credit_transition VALUES
    ('claimed', 'pending', 'its worker released it before sending any call');

-- when the resolver may look at an unknown credit again (its own lease
-- while a lookup runs, then a backoff after an inconclusive one)
ALTER TABLE mt5credit.mt5_credit ADD COLUMN next_check_at timestamptz;

COMMENT ON COLUMN mt5credit.mt5_credit.next_check_at IS
    'unknown only: not before this time will a resolver look it up again';


-- what a worker needs to make (or look up) the balance deal
CREATE TYPE mt5credit.work_item AS (
    id                 bigint,
    attempts           integer,
    kind               text,
    direction          text,
    reference          text,
    mt5_server         text,
    mt5_login          bigint,
    amount_minor       bigint,
    currency           text,
    currency_digits    smallint,
    client_id          text,
    owner_ok           boolean,   -- the deposit's client still owns the
                                  -- login, active, in this currency
    created_at         timestamptz,
    claimed_at         timestamptz,
    lease_expires_at   timestamptz,
    lease_ms_left      bigint     -- at the moment of reading, DB clock
);


CREATE FUNCTION mt5credit.work_item_of(p_id bigint)
RETURNS mt5credit.work_item
LANGUAGE sql STABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT c.id, c.attempts, c.kind, c.direction, c.reference, c.mt5_server,
           c.mt5_login, c.amount_minor, c.currency, cur.minor_digits,
           d.client_id,
           EXISTS (SELECT 1 FROM client_account a
                   WHERE a.mt5_server = c.mt5_server
                     AND a.mt5_login = c.mt5_login
                     AND a.client_id = d.client_id
                     AND a.currency = c.currency
                     AND a.status = 'active'),
           c.created_at, c.claimed_at, c.lease_expires_at,
           (extract(epoch FROM c.lease_expires_at - clock_timestamp())
            * 1000)::bigint
    FROM mt5_credit c
    JOIN deposit d ON d.id = c.deposit_id
    JOIN currency cur ON cur.code = c.currency
    WHERE c.id = p_id
$$;


CREATE FUNCTION mt5credit.set_actor(p_actor text, p_detail jsonb)
RETURNS void
LANGUAGE sql
AS $$
    SELECT set_config('mt5credit.actor', left(p_actor, 200), true),
           set_config('mt5credit.detail',
                      coalesce(p_detail, '{}'::jsonb)::text, true)
$$;


--
-- Claims the oldest pending credit of the given MT5 servers: one atomic
-- statement, the pick in a CTE with FOR UPDATE SKIP LOCKED (a fence: the
-- planner cannot re-run the LIMIT and claim more), so concurrent workers
-- never claim the same row and never wait for each other.  A refund or
-- chargeback waits until the credit it reverses is done.
--
CREATE FUNCTION mt5credit.claim_credit(p_worker text, p_lease_seconds integer,
    p_servers text[])
RETURNS SETOF mt5credit.work_item
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_id  bigint;
BEGIN
    IF p_lease_seconds < 1 THEN
        RAISE EXCEPTION 'lease must be at least a second' USING ERRCODE = 'MC020';
    END IF;

    PERFORM set_actor(p_worker, '{"step": "claim"}');

    WITH next AS (
        SELECT c.id
        FROM mt5_credit c
        WHERE c.status = 'pending'
          AND c.mt5_server = ANY (p_servers)
          AND (c.original_credit_id IS NULL
               OR EXISTS (SELECT 1 FROM mt5_credit o
                          WHERE o.id = c.original_credit_id
                            AND o.status = 'done'))
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


-- claimed -> pending: the worker gave the claim back before any call
CREATE FUNCTION mt5credit.credit_release(p_id bigint, p_attempt integer,
    p_worker text, p_detail jsonb)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    PERFORM set_actor(p_worker, p_detail);

    UPDATE mt5_credit SET status = 'pending', lease_expires_at = NULL
    WHERE id = p_id AND status = 'claimed' AND attempts = p_attempt;

    RETURN FOUND;
END
$$;


-- claimed -> done: MT5 returned the deal ticket
CREATE FUNCTION mt5credit.credit_succeeded(p_id bigint, p_attempt integer,
    p_ticket bigint, p_worker text, p_detail jsonb)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    PERFORM set_actor(p_worker, p_detail);

    UPDATE mt5_credit SET status = 'done', mt5_deal_ticket = p_ticket
    WHERE id = p_id AND status = 'claimed' AND attempts = p_attempt;

    RETURN FOUND;
END
$$;


--
-- claimed -> failed, with a case for a person: MT5 refused explicitly, or
-- a check before the call failed (ownership, account, currency, funds).
--
CREATE FUNCTION mt5credit.credit_failed(p_id bigint, p_attempt integer,
    p_case_kind text, p_worker text, p_detail jsonb)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
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


-- claimed -> unknown: timeout, disconnect, an answer that cannot be trusted
CREATE FUNCTION mt5credit.credit_unknown(p_id bigint, p_attempt integer,
    p_worker text, p_detail jsonb)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    PERFORM set_actor(p_worker, p_detail);

    UPDATE mt5_credit SET status = 'unknown'
    WHERE id = p_id AND status = 'claimed' AND attempts = p_attempt;

    RETURN FOUND;
END
$$;


--
-- A claim whose lease ran out (its worker died or hung) may have reached
-- MT5: unknown, never pending.
--
CREATE FUNCTION mt5credit.sweep_expired_leases(p_worker text)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
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


--
-- Picks unknown credits a resolver may look up now: their lease is over
-- (so any call made under it has finished or timed out) plus a margin for
-- a request MT5 may still have been executing, and no other resolver is
-- looking at them.  Picking sets next_check_at as a short lease of its
-- own, so two resolvers never look the same credit up at once.
--
CREATE FUNCTION mt5credit.resolve_claim(p_servers text[],
    p_margin_seconds integer, p_lookup_seconds integer, p_limit integer)
RETURNS SETOF mt5credit.work_item
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
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


-- unknown -> done: exactly one balance deal carries the reference and amount
CREATE FUNCTION mt5credit.resolve_found(p_id bigint, p_attempt integer,
    p_ticket bigint, p_worker text, p_detail jsonb)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    PERFORM set_actor(p_worker, p_detail);

    UPDATE mt5_credit
    SET status = 'done', mt5_deal_ticket = p_ticket, next_check_at = NULL
    WHERE id = p_id AND status = 'unknown' AND attempts = p_attempt;

    RETURN FOUND;
END
$$;


-- unknown -> pending: MT5 answered in full and no deal carries the reference
CREATE FUNCTION mt5credit.resolve_absent(p_id bigint, p_attempt integer,
    p_worker text, p_detail jsonb)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    PERFORM set_actor(p_worker, p_detail);

    UPDATE mt5_credit
    SET status = 'pending', next_check_at = NULL, lease_expires_at = NULL
    WHERE id = p_id AND status = 'unknown' AND attempts = p_attempt;

    RETURN FOUND;
END
$$;


--
-- Stays unknown, and a person is told: the reference was found with
-- another amount or more than once (deal_conflict), or MT5 gave no
-- complete, trusted answer (mt5_no_answer).  No answer is never "no deal".
-- The case is one per credit and kind; it is looked up again after
-- p_retry_seconds.
--
CREATE FUNCTION mt5credit.resolve_unresolved(p_id bigint, p_attempt integer,
    p_case_kind text, p_worker text, p_detail jsonb, p_retry_seconds integer)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
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


--
-- The state of the work, for `mt5credit status` and monitoring.
--
CREATE FUNCTION mt5credit.work_status()
RETURNS TABLE (metric text, kind text, status text, value double precision)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT 'credits', c.kind, c.status, count(*)::double precision
    FROM mt5_credit c GROUP BY c.kind, c.status
    UNION ALL
    SELECT 'oldest_age_seconds', NULL, c.status,
           coalesce(extract(epoch FROM now() - min(c.created_at)), 0)
    FROM mt5_credit c
    WHERE c.status IN ('pending', 'claimed', 'unknown')
    GROUP BY c.status
    UNION ALL
    SELECT 'open_cases', k.kind, k.severity, count(*)::double precision
    FROM "case" k WHERE k.status <> 'resolved'
    GROUP BY k.kind, k.severity
$$;


GRANT EXECUTE ON FUNCTION
    mt5credit.claim_credit(text, integer, text[]),
    mt5credit.credit_release(bigint, integer, text, jsonb),
    mt5credit.credit_succeeded(bigint, integer, bigint, text, jsonb),
    mt5credit.credit_failed(bigint, integer, text, text, jsonb),
    mt5credit.credit_unknown(bigint, integer, text, jsonb),
    mt5credit.sweep_expired_leases(text),
    mt5credit.resolve_claim(text[], integer, integer, integer),
    mt5credit.resolve_found(bigint, integer, bigint, text, jsonb),
    mt5credit.resolve_absent(bigint, integer, text, jsonb),
    mt5credit.resolve_unresolved(bigint, integer, text, text, jsonb, integer),
    mt5credit.work_status()
    TO mt5credit_worker;

GRANT EXECUTE ON FUNCTION mt5credit.work_status()
    TO mt5credit_reader, mt5credit_operator;
