-- migrate: as-migrator
--
-- 052: the roles of the back-office console (issue 18).
--
-- The console is served by nginx, which authenticates the person (SSO
-- through auth_request, a client certificate, auth_basic).  It logs in to
-- PostgreSQL once, as its own role, and acts for that person by
-- SET LOCAL ROLE to the person's role, for one transaction.  So the rights,
-- the audit trail and the two-person rule are the database's, the same
-- as at the CLI (053: person() is the actor on both paths).
--
--   mt5credit_person   every person's role is a member, beside the group
--                      of what they may do (mt5credit_operator: act;
--                      mt5credit_reader: look).  053's person() takes as
--                      an actor set by SET ROLE only such a role.
--   mt5credit_console  the console's login roles are members.  A console
--                      login is NOINHERIT and a member of each person's
--                      role (docs/console.md): by itself it may do
--                      nothing; as a person, what that person may.
--
-- Neither role is granted anything here: t/91 proves from the catalogue
-- that neither may execute a function or read a table.
--

DO $roles$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'mt5credit_person')
    THEN
        CREATE ROLE mt5credit_person NOLOGIN;
    END IF;

    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'mt5credit_console')
    THEN
        CREATE ROLE mt5credit_console NOLOGIN NOINHERIT;
    END IF;
END
$roles$;

COMMENT ON ROLE mt5credit_person IS
    'mt5-credit: each person''s role is a member; the only roles the '
    'console may act as (052, 053)';
COMMENT ON ROLE mt5credit_console IS
    'mt5-credit: the console''s login roles (NOINHERIT, members of the '
    'persons they act for); no rights of its own (052)';
