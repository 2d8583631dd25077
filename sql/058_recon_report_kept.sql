--
-- 058: a reconciliation run's HTML report is kept in the database too.
--
-- `mt5credit reconcile` writes each run's report to recon_out on the host
-- it runs on (mc_recon_report.c), where the people at the desk cannot
-- reach it.  Now it also stores the same bytes here, once per run, and
-- the console (ngx_mt5_credit_console.c, api/recon_report) hands them to
-- a person as a download.  The report is a function of the run's finished
-- rows, so a run's report never changes: the first one stored stays, and
-- the table refuses updates and deletes, like the run itself.
--

CREATE TABLE mt5credit.recon_report (
    run_id       bigint      PRIMARY KEY REFERENCES mt5credit.recon_run (id),
    html         text        NOT NULL CHECK (length(html) > 0),
    html_sha256  text        NOT NULL CHECK (html_sha256 ~ '^[0-9a-f]{64}$'),
    stored_by    text        NOT NULL DEFAULT mt5credit.person(),
    stored_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    CHECK (html_sha256 = encode(sha256(convert_to(html, 'UTF8')), 'hex'))
);

COMMENT ON TABLE mt5credit.recon_report IS
    'Each finished reconciliation run''s HTML report, as the job wrote it '
    '(058); append-only.';

CREATE TRIGGER recon_report_append_only
    BEFORE UPDATE OR DELETE ON mt5credit.recon_report
    FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();

REVOKE ALL ON mt5credit.recon_report FROM PUBLIC;
GRANT SELECT ON mt5credit.recon_report
    TO mt5credit_reader, mt5credit_operator;


-- the job's one way in: a finished run's report, kept once (true: stored
-- now; false: it was there already)
CREATE FUNCTION mt5credit.recon_report_store(p_run bigint, p_html text)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
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

REVOKE ALL ON FUNCTION mt5credit.recon_report_store(bigint, text)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mt5credit.recon_report_store(bigint, text)
    TO mt5credit_recon;
