-- migrate: as-migrator
--
-- 088: the journal entries an ingest writes, at less cost again (issue 33:
-- 10 % of ingest_batch() or less; docs/testing.md has the figures).
--
-- A paid webhook writes three entries: its event's digest, its credit's
-- first history row, and its deposit's change to succeeded.  083 spared
-- the event's the lock and the lookup of its chain's end; here the other
-- two are spared the lookup, and a batch's events are entered in one
-- statement:
--
--   * A credit's first history row (from_status NULL) is written as the
--     credit is born, and a deposit's first (from created: no transition
--     leads back to created, 013) as it first moves: each is entry 1 of
--     its chain.  The trigger's fourth argument names that from_status
--     ('-' for NULL).  Were it ever not the first, UNIQUE (chain, seq)
--     refuses it and the writer's transaction fails: never a fork, never
--     a silent gap.
--
--   * A stored webhook's entry is written by a statement trigger over the
--     statement's new rows (a transition table): ingest_batch() stores a
--     batch's events in one INSERT, so their entries are one INSERT too,
--     not one trigger call and one INSERT each.  Each is entry 1 of its
--     own chain, hashed as before.  An event's later change (its body
--     redacted, 070) is still entered by the row trigger, as 083 does.
--
-- Re-declared, this file holds their current definitions:
--   journal_record()           (083's: the first entry of a history)
--   credit_history_journal,
--   deposit_history_journal    (083's: the fourth argument)
--   webhook_event_journal      (081's: INSERT only, for each statement;
--                               its UPDATE is webhook_event_journal_update)
--

SET ROLE mt5credit_owner;

-- The trigger of every chained table: TG_ARGV[0] names the column whose
-- value is the chain's entity ('id': the row itself), TG_ARGV[1] the
-- chain's kind, TG_ARGV[2] 'locked' when every writer of the chain holds
-- its entity's row lock, TG_ARGV[3] the from_status only a history's
-- first row has ('-': NULL).  The fact's text is the writer's
-- (timestamps in its session's zone); its value is what the verifier
-- compares.  The hash is 081's: sha256(prev || chain \n seq \n entry).
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

    IF (TG_OP = 'INSERT' AND TG_ARGV[0] = 'id')
       OR coalesce(v_entry->>'from_status', '-') = TG_ARGV[3]
    THEN
        -- a new row's own chain, or a history's first row: entry 1 (a
        -- second is refused)
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

CREATE OR REPLACE TRIGGER credit_history_journal
    AFTER INSERT ON mt5credit.credit_history
    FOR EACH ROW EXECUTE FUNCTION mt5credit.journal_record('credit_id',
                                                           'credit',
                                                           'locked', '-');
CREATE OR REPLACE TRIGGER deposit_history_journal
    AFTER INSERT ON mt5credit.deposit_history
    FOR EACH ROW EXECUTE FUNCTION mt5credit.journal_record('deposit_id',
                                                           'deposit',
                                                           'locked',
                                                           'created');

-- A statement's stored webhooks, each the first entry of its own chain,
-- in one INSERT, in id order; the same entry and hash as the row trigger
-- writes
CREATE FUNCTION mt5credit.journal_record_events() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    INSERT INTO journal (chain, seq, source, source_id, entry, prev_hash,
                         hash)
    SELECT f.chain, 1, 'webhook_event', f.id, f.entry, f.zero,
           sha256(f.zero || convert_to(f.chain || E'\n1\n' || f.entry::text,
                                       'UTF8'))
    FROM (SELECT n.id, 'event:' || n.id AS chain,
                 journal_event_fact(n::webhook_event) AS entry,
                 '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea AS zero
          FROM new_events n) f
    ORDER BY f.id;
    RETURN NULL;
END
$$;

DROP TRIGGER webhook_event_journal ON mt5credit.webhook_event;
CREATE TRIGGER webhook_event_journal
    AFTER INSERT ON mt5credit.webhook_event
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.journal_record_events();
CREATE TRIGGER webhook_event_journal_update
    AFTER UPDATE ON mt5credit.webhook_event
    FOR EACH ROW EXECUTE FUNCTION mt5credit.journal_record('id', 'event');

RESET ROLE;

REVOKE ALL ON FUNCTION mt5credit.journal_record_events() FROM PUBLIC;
