-- migrate: as-migrator
--
-- 093: an ingest_batch() statement's facts are one journal entry, not
-- three entries a webhook (issue 33: the journal's cost to ingest_batch()
-- 10 % or less; docs/testing.md has the figures).
--
-- 088 left each paid webhook of a batch three entries: its event's, its
-- credit's first history row and its deposit's move to succeeded, each
-- built, hashed and inserted with the journal's indexes.  Measured, that
-- is 12 to 15 % of the batch's time, most of it per entry: the row, its
-- index entries, its trigger call.  The facts themselves are cheap.
--
-- So an entry may now hold a statement's facts of one kind, in id order,
-- as arrays keyed by their table:
--
--   * events:<first id>   every webhook_event a statement stores (any
--                         statement: ingest() stores one, ingest_batch()
--                         a batch): {"id": <first>, "webhook_event":
--                         [fact, ...]}, each fact 081's
--                         journal_event_fact().  A stored event's later
--                         change is still entered alone, event:<id>.
--
--   * ingest:<first id>   the history rows of the credits an
--                         ingest_batch() statement makes, and of the
--                         deposits it moves to succeeded: {"id": <first
--                         credit>, "credit_history": [row, ...],
--                         "deposit_history": [row, ...]}, each row
--                         to_jsonb() as the row trigger enters it.
--
-- Each is entry 1 of a chain of its own, hashed as every entry is (081):
-- a statement's entry needs no lookup and no lock, and no two statements
-- share a chain.  A batch's credit or deposit goes on in its own chain
-- (credit:<id>) from its next change: that chain then starts at #1
-- there, its birth being in the ingest entry.  The periods' signed roots
-- cover these entries as they cover any.
--
-- What decides which rows an ingest entry holds: the setting
-- mt5credit.actors, the map of each batch credit's and deposit's actor,
-- is set exactly while ingest_batch()'s one statement runs (062), and
-- nothing that statement sets off changes it (mt5credit.actor it may:
-- a credit held as it is born is held under its element's actor, 079).
-- While the map is set, the history tables' row triggers do not enter a
-- row (their WHEN), and at the statement's end the statement trigger on
-- mt5_credit enters them all:
--
--   * every history row of the statement's new credits: a credit born in
--     the statement has no other (born pending, perhaps held or deferred
--     by the AFTER triggers that fire before this one, 079 and 078);
--   * each of their deposits' one move to succeeded (nothing leaves
--     succeeded, 013: a deposit has one such row ever).
--
-- Inside the statement no other history row is written.  Looking the
-- map up for each row's own credit or deposit would make this exact for
-- any caller, and cost the batch seven points more (docs/testing.md).
--
-- The map is a setting, and any session can set one.  A caller that set
-- it around other writes would leave history rows that no entry holds,
-- or (a new credit of an old deposit) that two do: `audit verify` names
-- each, as it compares every row of the chained tables with the entries
-- that hold it, both ways (t/21).
--
-- The entry's value is stored compressed with lz4 (Debian's PostgreSQL
-- is built with it): an ingest entry of a batch of 50 is some 40 kB.
--
-- Re-declared, this file holds their current definitions:
--   journal_record_events()       (088's: one entry a statement)
--   credit_history_journal,
--   deposit_history_journal       (088's: not while a batch runs)
--

SET ROLE mt5credit_owner;

ALTER TABLE mt5credit.journal ALTER COLUMN entry SET COMPRESSION lz4;

-- A statement's stored webhooks as one entry: events:<first id>, each
-- fact 081's, in id order.  The append is inlined here and below, as 083
-- inlined it into journal_record(): a call of 081's journal_append()
-- measured a point more of the batch's time (docs/testing.md).
CREATE OR REPLACE FUNCTION mt5credit.journal_record_events() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_first  bigint;
    v_facts  jsonb;
    v_chain  text;
    v_entry  jsonb;
    v_zero   bytea := '\x0000000000000000000000000000000000000000000000000000000000000000';
BEGIN
    SELECT min(n.id), jsonb_agg(journal_event_fact(n::webhook_event)
                                ORDER BY n.id)
    INTO v_first, v_facts
    FROM new_events n;

    IF v_first IS NULL THEN
        RETURN NULL;
    END IF;

    v_chain := 'events:' || v_first;
    v_entry := jsonb_build_object('id', v_first, 'webhook_event', v_facts);
    INSERT INTO journal (chain, seq, source, source_id, entry, prev_hash,
                         hash)
    VALUES (v_chain, 1, 'webhook_event', v_first, v_entry, v_zero,
            sha256(v_zero || convert_to(v_chain || E'\n1\n'
                                        || v_entry::text, 'UTF8')));
    RETURN NULL;
END
$$;

-- An ingest_batch() statement's credits' and deposits' history rows as
-- one entry: ingest:<first credit id>, each array in id order
CREATE FUNCTION mt5credit.journal_record_ingest() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_first     bigint;
    v_ids       bigint[];
    v_deposits  bigint[];
    v_credits   jsonb;
    v_moves     jsonb;
    v_chain     text;
    v_entry     jsonb;
    v_zero      bytea := '\x0000000000000000000000000000000000000000000000000000000000000000';
BEGIN
    -- as arrays, each history read through its index: a transition table
    -- has no statistics, and a join with it cost this trigger ten times
    -- as much (docs/testing.md)
    SELECT min(n.id), array_agg(n.id), array_agg(n.deposit_id)
    INTO v_first, v_ids, v_deposits
    FROM new_credits n;
    IF v_first IS NULL THEN
        RETURN NULL;
    END IF;

    SELECT jsonb_agg(to_jsonb(h) ORDER BY h.id) INTO v_credits
    FROM credit_history h
    WHERE h.credit_id = ANY (v_ids);

    SELECT jsonb_agg(to_jsonb(h) ORDER BY h.id) INTO v_moves
    FROM deposit_history h
    WHERE h.deposit_id = ANY (v_deposits)
      AND h.to_status = 'succeeded';

    v_chain := 'ingest:' || v_first;
    v_entry := jsonb_build_object('id', v_first,
                                  'credit_history',
                                  coalesce(v_credits, '[]'),
                                  'deposit_history',
                                  coalesce(v_moves, '[]'));
    INSERT INTO journal (chain, seq, source, source_id, entry, prev_hash,
                         hash)
    VALUES (v_chain, 1, 'mt5_credit', v_first, v_entry, v_zero,
            sha256(v_zero || convert_to(v_chain || E'\n1\n'
                                        || v_entry::text, 'UTF8')));
    RETURN NULL;
END
$$;

CREATE TRIGGER mt5_credit_journal
    AFTER INSERT ON mt5credit.mt5_credit
    REFERENCING NEW TABLE AS new_credits
    FOR EACH STATEMENT
    WHEN (coalesce(current_setting('mt5credit.actors', true), '') <> '')
    EXECUTE FUNCTION mt5credit.journal_record_ingest();

-- the history rows a batch's statement writes are its ingest entry's
CREATE OR REPLACE TRIGGER credit_history_journal
    AFTER INSERT ON mt5credit.credit_history
    FOR EACH ROW
    WHEN (coalesce(current_setting('mt5credit.actors', true), '') = '')
    EXECUTE FUNCTION mt5credit.journal_record('credit_id', 'credit',
                                              'locked', '-');
CREATE OR REPLACE TRIGGER deposit_history_journal
    AFTER INSERT ON mt5credit.deposit_history
    FOR EACH ROW
    WHEN (coalesce(current_setting('mt5credit.actors', true), '') = '')
    EXECUTE FUNCTION mt5credit.journal_record('deposit_id', 'deposit',
                                              'locked', 'created');

RESET ROLE;

REVOKE ALL ON FUNCTION mt5credit.journal_record_ingest() FROM PUBLIC;
