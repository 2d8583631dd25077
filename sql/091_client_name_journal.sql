-- migrate: as-migrator
--
-- 091: a client's name, as the payer_name rule reads it, is in the money
-- journal (issue 33).
--
-- The payer_name rule (082) holds a deposit whose signed payer's name is
-- not the client's name on file.  That name decides money, and it could
-- be changed without a trace: client_name_set() overwrote it, and the
-- journal did not hold it.  A name changed to match a stolen card's
-- holder, then changed back, would leave nothing.
--
-- Now each client's name row is a chain of its own, as a withdrawal's
-- states are (081): entry 1 as the row is made, one more each time the
-- portal sets the name again, each with the name and when.  The chain is
-- the name's history, kept and hashed; `audit verify` compares the row
-- with its chain's last entry, so a name changed around the trigger is
-- found, and the signed periods keep every earlier name.  A name row is
-- never deleted.
--
-- A chain is named by a number: the rows gain one (id), and the rows
-- already there are entered as their chains' start, as 081 entered the
-- tables it chained.
--

SET ROLE mt5credit_owner;

ALTER TABLE mt5credit.client_name
    ADD COLUMN id bigint GENERATED ALWAYS AS IDENTITY UNIQUE;

COMMENT ON COLUMN mt5credit.client_name.id IS
    'The row''s chain in the money journal, client_name:<id> (091).';

-- the names on file before there was a chain of them
SELECT mt5credit.journal_append('client_name:' || x.id, 'client_name', x.id,
                                to_jsonb(x))
FROM mt5credit.client_name x
ORDER BY x.id;

CREATE TRIGGER client_name_journal
    AFTER INSERT OR UPDATE ON mt5credit.client_name
    FOR EACH ROW EXECUTE FUNCTION mt5credit.journal_record('id',
                                                           'client_name');
CREATE TRIGGER client_name_no_delete
    BEFORE DELETE ON mt5credit.client_name
    FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();
CREATE TRIGGER client_name_no_truncate
    BEFORE TRUNCATE ON mt5credit.client_name
    FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();

RESET ROLE;

-- the auditor reads what it checks
GRANT SELECT ON mt5credit.client_name TO mt5credit_audit;
