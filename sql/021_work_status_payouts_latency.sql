--
-- 021: what monitoring reads, complete.
--
-- 008's work_status() with the payouts (018) beside the credits, and how
-- long credits take: a histogram of the seconds from intent to recorded
-- deal, over the credits made in the last hour (done is final, so its
-- updated_at is when the deal was recorded).  `mt5credit status
-- --prometheus` prints it as mt5credit_credit_latency_seconds.
--
-- Re-declared whole (CREATE OR REPLACE): migrations are immutable once
-- applied.  What is new: the rows after the cases.
--

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
    -- cumulative buckets, as Prometheus histograms are
    SELECT 'latency_bucket', NULL, b.le,
           count(l.s) FILTER (WHERE b.le = '+Inf' OR l.s <= b.le::numeric)
    FROM (VALUES ('0.05'), ('0.1'), ('0.25'), ('0.5'), ('1'), ('2.5'),
                 ('5'), ('10'), ('30'), ('60'), ('300'), ('+Inf')) AS b (le)
    LEFT JOIN (SELECT extract(epoch FROM c.updated_at - c.created_at) AS s
               FROM mt5_credit c
               WHERE c.created_at > now() - interval '1 hour'
                 AND c.status = 'done') l ON true
    GROUP BY b.le
    UNION ALL
    SELECT 'latency_sum', NULL, NULL,
           coalesce(sum(extract(epoch FROM c.updated_at - c.created_at)), 0)
    FROM mt5_credit c
    WHERE c.created_at > now() - interval '1 hour' AND c.status = 'done'
    UNION ALL
    SELECT 'latency_count', NULL, NULL, count(*)::double precision
    FROM mt5_credit c
    WHERE c.created_at > now() - interval '1 hour' AND c.status = 'done'
$$;
