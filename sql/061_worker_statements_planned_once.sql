--
-- 061: the worker's database work planned once, and its queue read from an
-- index of the queue alone.
--
-- Measured with pg_stat_statements (nested statements, planning tracked)
-- while four clients claimed and finished credits with the worker's own
-- functions, fsync on: claim_credit() took 3.5 ms and credit_succeeded()
-- 1.7 ms of a backend's time for each credit.  Two things in them cost
-- without protecting anything:
--
--   - SQL functions that PostgreSQL cannot inline (a SET clause, or more
--     than one output column) are parsed and planned again at every call.
--     work_item_of() was 0.5 to 0.7 ms of planning for every claim;
--     set_actor(), paused() and the latency bucket functions 20 to 100 us
--     each, several times per credit.  They are PL/pgSQL now, whose plans
--     are kept for the session: the same statements, the same results.
--   - The claim's pick (ORDER BY id, status pending) could be served by
--     the primary key, filtering out every credit already done, or by
--     004's index of open credits.  Which one was the planner's choice
--     from the table's statistics: analysed while a burst of credits was
--     pending, it took the primary key, and each claim walked over all
--     the credits done since (0.8 ms at 1,000 done, growing).  The open
--     index is split: pending credits alone, by id, which the pick reads
--     in order from its first entry whatever the statistics say; claimed
--     and unknown ones, by status and id, for the sweeper and the
--     resolver.  A credit is in exactly one of the two while open, so a
--     write touches as many index entries as before.
--
-- This file holds the current definitions of work_item_of() (036's
-- columns), set_actor() (008's), paused() (046's), credit_latency_le()
-- and credit_latency_ms() (050's).
--


-- --- the queue's indexes ------------------------------------------------------

DROP INDEX mt5credit.mt5_credit_open_idx;

-- the claim's pick: the oldest pending credit first
CREATE INDEX mt5_credit_pending_idx
    ON mt5credit.mt5_credit (id)
    WHERE status = 'pending';

-- the sweeper's expired leases and the resolver's unknown credits
CREATE INDEX mt5_credit_open_idx
    ON mt5credit.mt5_credit (status, id)
    WHERE status IN ('claimed', 'unknown');


-- --- 036's work_item_of(), its plan kept -------------------------------------

CREATE OR REPLACE FUNCTION mt5credit.work_item_of(p_id bigint)
RETURNS mt5credit.work_item
LANGUAGE plpgsql STABLE
SET search_path = mt5credit, pg_temp
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
                THEN (settle_request(c.id)).deal_ticket END
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


-- --- 008's set_actor() --------------------------------------------------------

CREATE OR REPLACE FUNCTION mt5credit.set_actor(p_actor text, p_detail jsonb)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM set_config('mt5credit.actor', left(p_actor, 200), true);
    PERFORM set_config('mt5credit.detail',
                       coalesce(p_detail, '{}'::jsonb)::text, true);
END
$$;


-- --- 046's paused() -----------------------------------------------------------

CREATE OR REPLACE FUNCTION mt5credit.paused(p_scope text, p_target text)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM pause
                   WHERE scope = p_scope AND target = p_target
                     AND resumed_at IS NULL);
END
$$;


-- --- 050's latency buckets ----------------------------------------------------

CREATE OR REPLACE FUNCTION mt5credit.credit_latency_le(p_ms bigint)
RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = mt5credit, pg_temp
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

CREATE OR REPLACE FUNCTION mt5credit.credit_latency_ms(
    p_created timestamptz, p_done timestamptz)
RETURNS bigint
LANGUAGE plpgsql IMMUTABLE
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    RETURN greatest(0, round(extract(epoch FROM p_done - p_created)
                             * 1000))::bigint;
END
$$;
