--
-- 072: the call shapes of the previous release (0.12.0) back, as wrappers.
--
-- Two migrations after 0.12.0 replaced a function the 0.12.0 binaries call
-- by one with more arguments and dropped the old signature in the same
-- release, so those commands of a 0.12.0 host stopped working as soon as
-- the database was migrated (docs/operations.md, "Upgrades: expand, then
-- contract"):
--   - 049 dropped events_list(provider, type, disposition, payment, since,
--     limit), which `mt5credit events list` of 0.12.0 calls: "function
--     mt5credit.events_list(...) does not exist" for the desk;
--   - 067 dropped recon_window(run, days), which `mt5credit reconcile` of
--     0.12.0 calls after recon_begin(): every reconciliation run of a
--     0.12.0 host failed.
-- Found by comparing the schema 0.12.0 built with this one
-- (t/93_previous_release.t now does it at every run: every function a
-- program's or a person's role may call in the previous release is
-- still there for that role).
--
-- Each comes back as a wrapper of the current function, with the grants
-- it had.  A 0.12.0 reconciliation gets the default grace (24 hours,
-- 067), as a run of this release does without --settlement-grace.  Both
-- may be dropped once the previous release no longer calls them (the
-- release after the next one).
--


-- 039's signature, by 049's and 051's function
CREATE FUNCTION mt5credit.events_list(p_provider text, p_type text,
    p_disposition text, p_payment text, p_since timestamptz,
    p_limit integer)
RETURNS TABLE (id bigint, provider text, provider_event_id text,
               event_type text, signature_scheme text,
               received_at timestamptz, disposition text, credit_id bigint,
               replays bigint, bytes integer, detail text)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT * FROM mt5credit.events_list(p_provider, p_type, p_disposition,
                                        p_payment, NULL::text, p_since,
                                        NULL::timestamptz, NULL::text,
                                        p_limit)
$$;

REVOKE ALL ON FUNCTION mt5credit.events_list(text, text, text, text,
    timestamptz, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mt5credit.events_list(text, text, text, text,
    timestamptz, integer) TO mt5credit_operator, mt5credit_reader;

COMMENT ON FUNCTION mt5credit.events_list(text, text, text, text,
    timestamptz, integer) IS
    'The previous release''s call of events_list() (039''s signature), '
    'kept as a wrapper (072)';


-- 040's signature, by 067's function: the run's grace stays the default
CREATE FUNCTION mt5credit.recon_window(p_run bigint, p_days integer)
RETURNS void
LANGUAGE sql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT mt5credit.recon_window(p_run, p_days,
        (SELECT settlement_grace_hours FROM mt5credit.recon_run
         WHERE id = p_run))
$$;

REVOKE ALL ON FUNCTION mt5credit.recon_window(bigint, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mt5credit.recon_window(bigint, integer)
    TO mt5credit_recon;

COMMENT ON FUNCTION mt5credit.recon_window(bigint, integer) IS
    'The previous release''s call of recon_window() (040''s signature), '
    'kept as a wrapper (072)';

