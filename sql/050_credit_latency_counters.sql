--
-- 050: how long credits take, as a histogram that only grows.
--
-- 021's mt5credit_credit_latency_seconds was recomputed at every read
-- over the credits made in the last hour: a credit left it an hour later,
-- its buckets went down, and Prometheus read each fall as a reset, so
-- rate() and histogram_quantile() over it meant nothing.  Now a credit is
-- counted once, in the transaction that makes it done (done is final,
-- 004), into counters nothing else writes: credit_latency.  `mt5credit
-- status --prometheus` prints them as the same histogram, cumulative and
-- monotonic, and credits done per kind as mt5credit_credits_done_total.
--
-- One row per kind, bucket and shard; a credit goes to shard id % 8, so
-- workers recording deals at once rarely wait on one row's lock, and
-- each transaction that makes a credit done (008, 033: one credit each)
-- locks one row, so two cannot deadlock on them.  A read sums the shards.
--
-- The credits already done are counted here once, so the totals start
-- from the whole history, not from this migration.
--
-- work_status() (043's) is re-declared here: this file holds its current
-- definition.
--

CREATE TABLE mt5credit.credit_latency (
    kind       text     NOT NULL CHECK (kind <> ''),
    -- the bucket's upper bound in seconds, as Prometheus' le names it;
    -- counts are per bucket here, made cumulative when read
    le         text     NOT NULL
               CHECK (le IN ('0.05', '0.1', '0.25', '0.5', '1', '2.5', '5',
                             '10', '30', '60', '300', '+Inf')),
    shard      smallint NOT NULL CHECK (shard BETWEEN 0 AND 7),
    n          bigint   NOT NULL DEFAULT 0 CHECK (n >= 0),
    -- milliseconds, summed: an integer, never rounded twice
    sum_ms     bigint   NOT NULL DEFAULT 0 CHECK (sum_ms >= 0),
    PRIMARY KEY (kind, le, shard)
);

COMMENT ON TABLE mt5credit.credit_latency IS
    'credits done and their intent-to-deal time, counted once each when '
    'they became done (050); only grows';

REVOKE ALL ON mt5credit.credit_latency FROM PUBLIC;


-- the bucket a latency falls in: the smallest bound not below it
CREATE FUNCTION mt5credit.credit_latency_le(p_ms bigint)
RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT CASE
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
           ELSE '+Inf' END
$$;

REVOKE ALL ON FUNCTION mt5credit.credit_latency_le(bigint) FROM PUBLIC;


-- a credit's time from intent to recorded deal, in whole milliseconds;
-- a clock that stepped back between the two counts as 0, not negative
CREATE FUNCTION mt5credit.credit_latency_ms(p_created timestamptz,
    p_done timestamptz)
RETURNS bigint
LANGUAGE sql IMMUTABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT greatest(0, round(extract(epoch FROM p_done - p_created)
                             * 1000))::bigint
$$;

REVOKE ALL ON FUNCTION mt5credit.credit_latency_ms(timestamptz, timestamptz)
    FROM PUBLIC;


-- SECURITY DEFINER: whoever makes a credit done (through 008's or
-- 033's functions) need not be able to write the counters
CREATE FUNCTION mt5credit.credit_latency_count()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
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

REVOKE ALL ON FUNCTION mt5credit.credit_latency_count() FROM PUBLIC;

-- done is final (004's transitions): this fires once per credit
CREATE TRIGGER credit_done_counts_latency
    AFTER UPDATE OF status ON mt5credit.mt5_credit
    FOR EACH ROW
    WHEN (NEW.status = 'done' AND OLD.status IS DISTINCT FROM 'done')
    EXECUTE FUNCTION mt5credit.credit_latency_count();


-- the credits done before this migration, once (their updated_at is when
-- the deal was recorded: done is final)
INSERT INTO mt5credit.credit_latency (kind, le, shard, n, sum_ms)
SELECT c.kind,
       mt5credit.credit_latency_le(
           mt5credit.credit_latency_ms(c.created_at, c.updated_at)),
       (c.id % 8)::smallint, count(*),
       sum(mt5credit.credit_latency_ms(c.created_at, c.updated_at))
FROM mt5credit.mt5_credit c
WHERE c.status = 'done'
GROUP BY 1, 2, 3;


-- 043's work_status(); the latency rows now from the counters, and
-- credits done per kind as a counter beside the gauge of credits by status
CREATE OR REPLACE FUNCTION mt5credit.work_status()
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
