-- migrate: as-migrator
--
-- 001: roles and the schema.
--
-- Everything lives in schema mt5credit, owned by the NOLOGIN role
-- mt5credit_owner.  Programs never log in as the owner: each logs in as its
-- own role and is a member of exactly one of the group roles below, which
-- may only EXECUTE the SECURITY DEFINER functions meant for it.  So the
-- edge cannot read a deposit, the portal cannot forge a webhook event, and
-- nobody but the owner touches a table directly.
--
-- This migration runs as the migrating user (it needs CREATEROLE); every
-- later one runs as mt5credit_owner.

DO $roles$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY[
        'mt5credit_owner',      -- owns every object; never logs in
        'mt5credit_ingest',     -- nginx edge: EXECUTE ingest() only
        'mt5credit_portal',     -- client portal: accounts, deposits, status
        'mt5credit_worker',     -- credit worker and resolver (later)
        'mt5credit_operator',   -- the case desk (later)
        'mt5credit_reader'      -- read-only reporting
    ]
    LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
            EXECUTE format('CREATE ROLE %I NOLOGIN', r);
        END IF;
    END LOOP;
END
$roles$;

-- The migrating user must be able to SET ROLE mt5credit_owner.
DO $member$
BEGIN
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE format('GRANT mt5credit_owner TO %I', current_user);
    END IF;
END
$member$;

ALTER SCHEMA mt5credit OWNER TO mt5credit_owner;

-- Functions are executable by PUBLIC by default; nothing here is public.
ALTER DEFAULT PRIVILEGES FOR ROLE mt5credit_owner
    REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;

REVOKE ALL ON SCHEMA mt5credit FROM PUBLIC;
GRANT USAGE ON SCHEMA mt5credit TO mt5credit_ingest, mt5credit_portal,
    mt5credit_worker, mt5credit_operator, mt5credit_reader;
