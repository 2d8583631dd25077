-- migrate: as-migrator
--
-- 094: the outbound sender's own role (issue 34).
--
-- `mt5credit outbound` signs and sends the outbox's events (095) to the
-- broker's systems.  It holds the endpoints' signing secrets and nothing
-- that moves money: it logs in as a member of mt5credit_outbound, which
-- 095 lets claim, record and report deliveries and nothing else.  A
-- worker's or the desk's credentials cannot send, and the sender's
-- cannot make a deal, a case or a replay.
--

DO $roles$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles
                   WHERE rolname = 'mt5credit_outbound')
    THEN
        CREATE ROLE mt5credit_outbound NOLOGIN;
    END IF;
END
$roles$;

GRANT USAGE ON SCHEMA mt5credit TO mt5credit_outbound;
