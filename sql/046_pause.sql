--
-- 046: a kill switch: crediting paused per MT5 server, per provider and
-- per credit kind, by a person, with who and why.
--
-- An MT5 server misbehaving, a provider sending what it should not, a
-- kind of credit found wrong: a person must be able to stop the money
-- moving at once, without stopping the workers (which would also stop
-- the resolver, the sweep of expired leases and every other server),
-- and without losing anything.  So:
--   - A pause is a row: scope (server, provider, kind), target, reason,
--     who (the login, session_user) and when; resuming it records who,
--     when and a note on the same row, which is then history: a row is
--     never deleted, and nothing else on it ever changes.  At most one
--     pause of a scope and target is active (a partial unique index).
--   - The claim itself enforces it.  claim_credit() is re-declared here:
--     a paused server's, provider's or kind's pending credits are not
--     claimed.  A credit already claimed finishes: its call is in flight
--     and must record its outcome.  Webhooks are still stored and
--     answered 200 (ingest() does not look at pauses): only crediting
--     waits.  The resolver still looks unknown credits up (it moves no
--     money; a credit it puts back to pending then waits too).
--   - A paused provider's refund legs and payouts are not claimed
--     either: refund_claim() and payout_claim() are re-declared here.
--   - Pausing moves no money, so one person may do it, as may resuming:
--     resuming only lets credits made under every other rule go on.
--     Both are for mt5credit_operator; pause_list() also for the worker
--     and the reader (mt5credit status shows the pauses).
--
-- This file holds the current definitions of claim_credit() (026's,
-- whose conditions it keeps), refund_claim() (043's) and payout_claim()
-- (018's); what is new in each is marked 046.
--

CREATE TABLE mt5credit.pause (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    scope        text        NOT NULL
                             CHECK (scope IN ('server', 'provider', 'kind')),
    target       text        NOT NULL,
    reason       text        NOT NULL
                             CHECK (length(btrim(reason)) >= 3
                                    AND length(reason) <= 1000),
    paused_by    text        NOT NULL CHECK (paused_by <> ''),
    paused_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    resumed_by   text        CHECK (resumed_by <> ''),
    resumed_at   timestamptz,
    resume_note  text        CHECK (length(resume_note) <= 1000),

    -- a target as credits carry it: a provider's name (004's rule), a
    -- kind of credit (017's), an MT5 server's name as configured
    CHECK (scope <> 'provider' OR target ~ '^[a-z][a-z0-9_-]{0,31}$'),
    CHECK (scope <> 'kind'
           OR target IN ('deposit', 'refund', 'chargeback', 'correction',
                         'withdrawal')),
    CHECK (scope <> 'server' OR target ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'),

    -- resumed once, wholly, never before it was paused
    CHECK ((resumed_by IS NULL) = (resumed_at IS NULL)),
    CHECK (resume_note IS NULL OR resumed_at IS NOT NULL),
    CHECK (resumed_at IS NULL OR resumed_at >= paused_at)
);

COMMENT ON TABLE mt5credit.pause IS
    'Crediting paused per MT5 server, provider or credit kind: who, why, '
    'when, and who resumed it; resumed rows are the history.';

CREATE UNIQUE INDEX pause_one_active
    ON mt5credit.pause (scope, target) WHERE resumed_at IS NULL;

-- a pause's record is never rewritten: the only change is its resumption
CREATE FUNCTION mt5credit.pause_guard()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
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

CREATE TRIGGER pause_guard
    BEFORE UPDATE OR DELETE ON mt5credit.pause
    FOR EACH ROW EXECUTE FUNCTION mt5credit.pause_guard();

-- is this scope's target paused now (for the claims, as their owner)
CREATE FUNCTION mt5credit.paused(p_scope text, p_target text)
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT EXISTS (SELECT 1 FROM pause
                   WHERE scope = p_scope AND target = p_target
                     AND resumed_at IS NULL)
$$;


--
-- Pauses a scope's target, as the person logged in.  Refused: an
-- unknown scope, a target credits cannot carry, no reason, or a pause
-- of it already active (its who, when and why are said).
--
CREATE FUNCTION mt5credit.pause_set(p_scope text, p_target text,
    p_reason text)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
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
        VALUES (p_scope, p_target, p_reason, session_user)
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


-- Resumes an active pause, as the person logged in; its row is kept.
CREATE FUNCTION mt5credit.pause_resume(p_scope text, p_target text,
    p_note text)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_id  bigint;
BEGIN
    UPDATE pause
    SET resumed_by = session_user, resumed_at = clock_timestamp(),
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


--
-- The pauses: the active ones, or all of them with p_all; for each,
-- what it holds now: pending credits (and, for a provider, refund legs
-- and payouts) that the claims pass over because of it.
--
CREATE FUNCTION mt5credit.pause_list(p_all boolean)
RETURNS TABLE (id bigint, scope text, target text, reason text,
               paused_by text, paused_at timestamptz, resumed_by text,
               resumed_at timestamptz, resume_note text, held bigint)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
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


--
-- Claims the oldest pending credit of the given MT5 servers: one atomic
-- statement, the pick in a CTE with FOR UPDATE SKIP LOCKED (a fence: the
-- planner cannot re-run the LIMIT and claim more), so concurrent workers
-- never claim the same row and never wait for each other.  A refund or
-- chargeback waits until the credit it reverses is done; a reinstatement
-- until its chargeback debits are.  Nothing paused is claimed (046).
--
CREATE OR REPLACE FUNCTION mt5credit.claim_credit(p_worker text, p_lease_seconds integer,
    p_servers text[])
RETURNS SETOF mt5credit.work_item
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
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


--
-- pending -> sending: the oldest pending refund leg of this provider,
-- one atomic statement (SKIP LOCKED: concurrent senders never share a
-- row); none while the provider is paused (046).  The attempt number is
-- the lease token for the calls that follow.
--
CREATE OR REPLACE FUNCTION mt5credit.refund_claim(p_provider text, p_sender text,
    p_lease_seconds integer)
RETURNS SETOF mt5credit.refund_item
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
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


-- the same for payouts (018's, with the pause of 046)
CREATE OR REPLACE FUNCTION mt5credit.payout_claim(p_provider text, p_sender text,
    p_lease_seconds integer)
RETURNS SETOF mt5credit.payout_item
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
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


REVOKE ALL ON TABLE mt5credit.pause FROM PUBLIC;
REVOKE ALL ON FUNCTION
    mt5credit.pause_guard(),
    mt5credit.paused(text, text),
    mt5credit.pause_set(text, text, text),
    mt5credit.pause_resume(text, text, text),
    mt5credit.pause_list(boolean)
    FROM PUBLIC;

GRANT EXECUTE ON FUNCTION
    mt5credit.pause_set(text, text, text),
    mt5credit.pause_resume(text, text, text)
    TO mt5credit_operator;

GRANT EXECUTE ON FUNCTION mt5credit.pause_list(boolean)
    TO mt5credit_operator, mt5credit_worker, mt5credit_reader;
