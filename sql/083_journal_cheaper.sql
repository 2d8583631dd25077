-- migrate: as-migrator
--
-- 083: the money journal (081) at less cost to ingest (issue 33: 10 % of
-- ingest_batch() or less; docs/testing.md has the figures).
--
-- Measured in a real PostgreSQL 15, an entry cost about 35 us in
-- journal_append() and 10 more around it.  What of that is not the
-- entry's own work, and what replaces it here:
--
--   * The journal's four CHECKs (chain, seq, the two hashes) are read
--     back from their stored text (stringToNode), planned and compiled
--     for every INSERT statement, and an append is one statement: 15 %
--     of an append in perf.  The same rules as domains are planned once
--     a session (the type cache) and hold for every writer alike.  The
--     columns become the domains without a rewrite (a domain with no
--     constraint yet is the base type); the constraints are then added
--     to the domains, which checks every stored entry.
--
--   * A row's own chain (withdrawal, proposal, rule change, stored
--     webhook) starts with the row's INSERT: nobody else can see the row,
--     so it is entry 1 after 32 zero bytes, with no lock and no lookup.
--     An UPDATE of such a row holds the row's lock to its commit, which
--     orders that chain's writers; the advisory lock added nothing.
--
--   * A credit's history is written only by its credit's trigger (004,
--     062) on the credit's INSERT or UPDATE, a deposit's only by its
--     deposit's (013, 062): their writers are ordered by that row's lock
--     too (trigger argument 'locked').  The other histories (payouts,
--     refund legs, case actions) keep the advisory lock.
--
--   * One plpgsql call an entry, not two: the append is inlined into the
--     trigger (journal_append() stays for whoever appends by hand).
--
-- What the journal proves is unchanged: every chained fact gets its
-- entry, hashed the same way in the fact's transaction, and a chain
-- cannot fork: UNIQUE (chain, seq) refuses a second entry 1, or a second
-- entry n + 1, whatever a writer assumed (the writer's transaction
-- fails; nothing is written).  Seal and verify read the same columns.
--

SET ROLE mt5credit_owner;

-- what a journal row's columns may hold (081's CHECKs), as types
CREATE DOMAIN mt5credit.journal_chain AS text COLLATE "C";
CREATE DOMAIN mt5credit.journal_seq AS integer;
CREATE DOMAIN mt5credit.sha256_digest AS bytea;

ALTER TABLE mt5credit.journal
    ALTER COLUMN chain TYPE mt5credit.journal_chain COLLATE "C",
    ALTER COLUMN seq TYPE mt5credit.journal_seq,
    ALTER COLUMN prev_hash TYPE mt5credit.sha256_digest,
    ALTER COLUMN hash TYPE mt5credit.sha256_digest,
    DROP CONSTRAINT journal_chain_check,
    DROP CONSTRAINT journal_seq_check,
    DROP CONSTRAINT journal_prev_hash_check,
    DROP CONSTRAINT journal_hash_check;

-- a chain is its kind and its entity's id: credit:17
ALTER DOMAIN mt5credit.journal_chain
    ADD CONSTRAINT journal_chain_check
    CHECK (VALUE ~ '^[a-z_]+:[0-9]+$');
-- a chain's entries count from 1
ALTER DOMAIN mt5credit.journal_seq
    ADD CONSTRAINT journal_seq_check CHECK (VALUE > 0);
ALTER DOMAIN mt5credit.sha256_digest
    ADD CONSTRAINT sha256_digest_check CHECK (length(VALUE) = 32);

-- The trigger of every chained table: TG_ARGV[0] names the column whose
-- value is the chain's entity ('id': the row itself), TG_ARGV[1] the
-- chain's kind, TG_ARGV[2] 'locked' when every writer of the chain holds
-- its entity's row lock.  The fact's text is the writer's (timestamps in
-- its session's zone); its value is what the verifier compares.  The
-- hash is 081's: sha256(prev || chain \n seq \n entry).
CREATE OR REPLACE FUNCTION mt5credit.journal_record() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_entry  jsonb;
    v_chain  text;
    v_seq    integer;
    v_prev   bytea;
BEGIN
    IF TG_OP = 'UPDATE' AND NEW IS NOT DISTINCT FROM OLD THEN
        RETURN NULL;
    END IF;
    IF TG_TABLE_NAME = 'webhook_event' THEN
        v_entry := journal_event_fact(NEW);
        IF TG_OP = 'UPDATE' AND v_entry = journal_event_fact(OLD) THEN
            RETURN NULL;   -- nothing of the fact changed (a body redacted)
        END IF;
    ELSE
        v_entry := to_jsonb(NEW);
    END IF;
    v_chain := TG_ARGV[1] || ':' || (v_entry->>TG_ARGV[0]);

    IF TG_OP = 'INSERT' AND TG_ARGV[0] = 'id' THEN
        -- a new row's own chain: its first entry (a second is refused)
        v_seq := 1;
        v_prev := '\x0000000000000000000000000000000000000000000000000000000000000000';
    ELSE
        IF TG_ARGV[0] <> 'id' AND TG_ARGV[2] IS DISTINCT FROM 'locked' THEN
            -- no row lock orders this chain's writers: they take turns
            PERFORM pg_advisory_xact_lock(hashtextextended(
                        'mt5credit.journal:' || v_chain, 0));
        END IF;
        SELECT j.seq, j.hash INTO v_seq, v_prev
        FROM journal j WHERE j.chain = v_chain COLLATE "C"
        ORDER BY j.seq DESC LIMIT 1;
        v_seq := coalesce(v_seq, 0) + 1;
        v_prev := coalesce(v_prev, '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea);
    END IF;

    INSERT INTO journal (chain, seq, source, source_id, entry, prev_hash,
                         hash)
    VALUES (v_chain, v_seq, TG_TABLE_NAME, (v_entry->>'id')::bigint,
            v_entry, v_prev,
            sha256(v_prev || convert_to(v_chain || E'\n' || v_seq || E'\n'
                                        || v_entry::text, 'UTF8')));
    RETURN NULL;
END
$$;

-- the histories whose writers hold their entity's row lock
CREATE OR REPLACE TRIGGER credit_history_journal
    AFTER INSERT ON mt5credit.credit_history
    FOR EACH ROW EXECUTE FUNCTION mt5credit.journal_record('credit_id',
                                                           'credit',
                                                           'locked');
CREATE OR REPLACE TRIGGER deposit_history_journal
    AFTER INSERT ON mt5credit.deposit_history
    FOR EACH ROW EXECUTE FUNCTION mt5credit.journal_record('deposit_id',
                                                           'deposit',
                                                           'locked');

RESET ROLE;
