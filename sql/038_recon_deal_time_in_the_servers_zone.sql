--
-- 038: a deal's UTC time from the server's own time zone.
--
-- MT5 deal times are the server's wall clock.  Reconciliation turned each
-- into UTC with the one offset it measured at its run: on a day the
-- server's summer time began or ended, or a week later for a late run,
-- deals made under the other offset moved by an hour, and those near
-- midnight changed day (counted twice, or never).  A server configured
-- with its zone (time_zone in its [server] section) sends each deal's
-- server time and the zone with it, and the database converts it with
-- its time zone data: the offset in force when the deal was made.
-- Without a zone, the offset measured at the run still applies.
--

ALTER TABLE mt5credit.recon_deal_in
    ADD COLUMN server_time bigint,      -- the deal's Time, server seconds
    ADD COLUMN time_zone   text;        -- the server's zone, or NULL

CREATE FUNCTION mt5credit.recon_deal_in_zoned()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    IF NEW.time_zone IS NOT NULL THEN
        -- the wall-clock reading, taken as the zone's local time
        NEW.deal_epoch := extract(epoch FROM
            timezone(NEW.time_zone, timezone('UTC',
                                             to_timestamp(NEW.server_time))))
            ::bigint;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER recon_deal_in_zoned
    BEFORE INSERT ON mt5credit.recon_deal_in
    FOR EACH ROW EXECUTE FUNCTION mt5credit.recon_deal_in_zoned();
