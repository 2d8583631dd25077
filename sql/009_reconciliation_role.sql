-- migrate: as-migrator
--
-- 009: the reconciliation job's own role.
--
-- Reconciliation reads everything and writes only its runs, their items
-- and cases; it moves no money.  It logs in as a member of
-- mt5credit_recon, which may EXECUTE the functions of 010 and nothing
-- else.  People at the case desk are members of mt5credit_operator (001),
-- each with their own login: the database, not the program, knows who
-- acted (session_user), which is what the two-person rule of 011 rests on.

DO $roles$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'mt5credit_recon')
    THEN
        CREATE ROLE mt5credit_recon NOLOGIN;
    END IF;
END
$roles$;

GRANT USAGE ON SCHEMA mt5credit TO mt5credit_recon;
