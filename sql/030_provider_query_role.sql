-- migrate: as-migrator
--
-- 030: the provider query's own role.
--
-- `mt5credit poll-provider` ran as the worker's role, so anyone holding a
-- batch host's worker credentials could feed query_answered() (028 now
-- checks what it is fed, but the worker never needs to call it at all).
-- The query logs in as a member of mt5credit_query, which 031 lets run
-- the three query functions of 015 and nothing else.
--

DO $roles$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'mt5credit_query')
    THEN
        CREATE ROLE mt5credit_query NOLOGIN;
    END IF;
END
$roles$;

GRANT USAGE ON SCHEMA mt5credit TO mt5credit_query;
