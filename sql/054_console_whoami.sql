--
-- 054: the console asks who it acts for, and what that person may do.
--
-- The console's first call for a page (ngx_mt5_credit_console.c, as the
-- person by SET LOCAL ROLE, 052): the person (053's person(), so the name
-- the database records, not the name the browser shows) and whether they
-- may act (mt5credit_operator) or only look (mt5credit_reader).  The
-- pages show or hide their actions by it; the database still decides
-- every call on its own grants.
--

CREATE FUNCTION mt5credit.console_whoami()
RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT jsonb_build_object(
        'person', p.who,
        'act', pg_has_role(p.who, 'mt5credit_operator', 'USAGE'),
        'read', pg_has_role(p.who, 'mt5credit_operator', 'USAGE')
                OR pg_has_role(p.who, 'mt5credit_reader', 'USAGE'))
    FROM (SELECT person() AS who) p
$$;

REVOKE ALL ON FUNCTION mt5credit.console_whoami() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mt5credit.console_whoami()
    TO mt5credit_operator, mt5credit_reader;
