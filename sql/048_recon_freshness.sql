--
-- 048: how fresh reconciliation is, for an alert that says "yesterday was
-- not reconciled".
--
-- Per provider and currency, from the runs themselves (append-only once
-- finished, 011): the last business day a run completed (reconciled,
-- breaks or pending: the day was compared, whatever it found), when that
-- run finished, and how long the last finished run of any verdict took,
-- with that verdict.  `mt5credit status --prometheus` prints them as
--   mt5credit_recon_last_success_timestamp_seconds{provider,currency}
--   mt5credit_recon_last_day_timestamp_seconds{provider,currency}
--   mt5credit_recon_last_run_duration_seconds{provider,currency,verdict}
-- and docs/examples/mt5credit-alerts.yml alerts on the second.
--
-- A run is one transaction, and recon_match() sets finished_at = now(),
-- the transaction's start, as started_at is: every run took 0 s.  A
-- trigger now stamps finished_at with the clock when the verdict is
-- written, so finished_at - started_at is the run's time.
--

CREATE FUNCTION mt5credit.recon_run_finish_clock()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    IF OLD.verdict = 'running' AND NEW.verdict <> 'running' THEN
        NEW.finished_at := clock_timestamp();
    END IF;
    RETURN NEW;
END
$$;

-- (after recon_run_finished_is_final, by name: the guard sees the row
-- as the caller wrote it)
CREATE TRIGGER recon_run_stamp_finish
    BEFORE UPDATE ON mt5credit.recon_run
    FOR EACH ROW EXECUTE FUNCTION mt5credit.recon_run_finish_clock();

REVOKE ALL ON FUNCTION mt5credit.recon_run_finish_clock() FROM PUBLIC;

CREATE FUNCTION mt5credit.recon_freshness()
RETURNS TABLE (provider text, currency text, last_day date,
               last_day_start timestamptz, last_success_at timestamptz,
               last_run_verdict text, last_run_seconds numeric)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
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

REVOKE ALL ON FUNCTION mt5credit.recon_freshness() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mt5credit.recon_freshness()
    TO mt5credit_worker, mt5credit_reader, mt5credit_operator,
       mt5credit_recon;
