--
-- 041: a server without a time zone: its offset at each end of the day.
--
-- MT5 deal times are the server's wall clock.  With the server's zone
-- configured (038) each deal is read at its own moment's offset.  Without
-- one, reconciliation turned every deal into UTC with the offset it
-- measured at its run: right only if the offset did not change between
-- the day and the run.  A late run (a week later, after a change of
-- summer time) moved deals near midnight to the wrong day; a change
-- during the day went unseen.
--
-- Now every run records the offset it measured, per server, and a run
-- takes the offset that held at each end of its day from the measurement
-- nearest to that end, within 18 hours: the daily run (the timer's is at
-- 13:30 UTC, for the day before) measures its clock once a day, so the
-- nearest to a day's start is the run of the day before it, made that
-- afternoon, and the nearest to its end the day's own run, made the next
-- afternoon (summer time changes at night, local time).  Then:
--   - both ends agree: that offset, whatever the offset is now;
--   - they differ: the offset changed during the day, and a deal near a
--     step cannot be placed without the zone: the run is incomplete, and
--     says to configure time_zone;
--   - no measurement near an end: the offset now, and the run says so.
--

CREATE TABLE mt5credit.recon_clock (
    run_id       bigint      NOT NULL REFERENCES mt5credit.recon_run (id),
    mt5_server   text        NOT NULL,
    offset_s     integer     NOT NULL CHECK (offset_s BETWEEN -50400 AND 50400),
    measured_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (run_id, mt5_server)
);

COMMENT ON TABLE mt5credit.recon_clock IS
    'The UTC offset of each MT5 server''s clock as each reconciliation run '
    'measured it; append-only.';

CREATE INDEX recon_clock_server_idx
    ON mt5credit.recon_clock (mt5_server, measured_at);

CREATE TRIGGER recon_clock_append_only
    BEFORE UPDATE OR DELETE OR TRUNCATE ON mt5credit.recon_clock
    FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();


-- the measurement of a server's clock nearest to a moment, within 18
-- hours, by this run or a finished one; none: no row
CREATE FUNCTION mt5credit.recon_clock_near(p_run bigint, p_server text,
    p_at timestamptz)
RETURNS TABLE (offset_s integer, source text)
LANGUAGE sql STABLE
SET search_path = mt5credit, pg_temp
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


--
-- recon_clock(): records what the run measured now, and returns the
-- offset at the day's start and at its end, each with where it comes
-- from ('run N at T', 'this run', or 'now' when no measurement is near
-- that end).
--
CREATE FUNCTION mt5credit.recon_clock(p_run bigint, p_server text,
    p_offset_now integer)
RETURNS TABLE (start_offset integer, start_source text,
               end_offset integer, end_source text)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
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

REVOKE ALL ON FUNCTION mt5credit.recon_clock(bigint, text, integer),
    mt5credit.recon_clock_near(bigint, text, timestamptz)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mt5credit.recon_clock(bigint, text, integer)
    TO mt5credit_recon;
GRANT SELECT ON mt5credit.recon_clock
    TO mt5credit_recon, mt5credit_reader, mt5credit_operator;
