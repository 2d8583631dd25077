-- migrate: as-migrator
--
-- 089: a credit's and a deposit's history entered in the statement that
-- writes the history row (issue 33: the journal at 10 % of ingest_batch()
-- or less; docs/testing.md has the figures).
--
-- Until here each history row fired a second trigger (083, 088), a
-- SECURITY DEFINER function with its own search_path: a trigger event
-- queued and fetched back, a GUC level set and undone, an INSERT planned
-- and run on its own.  That machinery cost more than the entry: measured
-- with the edge's kept connections, the journal was 18 % of
-- ingest_batch()'s time, two thirds of it in those two triggers.
--
-- The history of a credit is written only by credit_guard_and_log() (004,
-- 062), a deposit's only by deposit_guard_and_log() (013, 062), and only
-- the owner may write either table.  So the writer enters its row itself,
-- in one statement: the history row's INSERT ... RETURNING feeds the
-- journal's INSERT.  The same entry, chain, seq and hash as before:
--
--   * a credit's first row (from_status NULL, written as the credit is
--     born) and a deposit's first (from created: no transition leads
--     back there, 013) are entry 1 after 32 zero bytes (088);
--   * any other row follows its chain's last entry, which the credit's or
--     deposit's row lock orders (083): the UPDATE that writes it holds it.
--
-- UNIQUE (chain, seq) still refuses a fork, whatever a writer assumed.
-- A history row written any other way (by hand, around these functions)
-- has no entry, and `audit verify` names it: a fact without its entry.
-- t/21 checks from the catalogue that no other function writes either
-- table.
--
-- journal_hash() is now the one definition of an entry's hash (081):
-- sha256(prev || chain \n seq \n entry).  An SQL function PostgreSQL
-- inlines into the statement that calls it (STABLE, as convert_to() is);
-- its body is bound as it is created, whatever a caller's search_path.
-- The other writers of entries use it too; journal_record() loses what
-- only the two histories used ('locked', the first row's from_status).
--
-- Re-declared, this file holds their current definitions:
--   credit_guard_and_log()    (062's: the history row entered)
--   deposit_guard_and_log()   (062's: the history row entered)
--   journal_record()          (088's: journal_hash(); two arguments)
--   journal_record_events()   (088's: journal_hash())
--   journal_append()          (081's: journal_hash())
-- and drops credit_history_journal and deposit_history_journal (088).
--

SET ROLE mt5credit_owner;

CREATE FUNCTION mt5credit.journal_hash(p_chain text, p_seq integer,
                                       p_prev bytea, p_entry jsonb)
RETURNS bytea
LANGUAGE sql STABLE
RETURN sha256(p_prev || convert_to(p_chain || E'\n' || p_seq || E'\n'
                                   || p_entry::text, 'UTF8'));

COMMENT ON FUNCTION mt5credit.journal_hash(text, integer, bytea, jsonb) IS
    'The hash of a journal entry (081): sha256(prev_hash || chain \n seq '
    '\n entry as text).';

-- 004's credit_guard_and_log(), as 062 left it, the history row entered
CREATE OR REPLACE FUNCTION mt5credit.credit_guard_and_log()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_seq   integer;
    v_prev  bytea;
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.status <> 'pending' OR NEW.attempts <> 0
           OR NEW.mt5_deal_ticket IS NOT NULL
        THEN
            RAISE EXCEPTION 'credit must be created pending, unattempted'
                USING ERRCODE = 'MC010';
        END IF;

        -- the credit's first row: entry 1 of its chain
        WITH h AS (
            INSERT INTO credit_history (credit_id, from_status, to_status,
                                        attempts, actor, detail)
            VALUES (NEW.id, NULL, NEW.status, NEW.attempts,
                    coalesce(batch_entry('c' || NEW.id::text),
                             credit_actor()),
                    credit_detail())
            RETURNING *),
        e AS (
            SELECT h.id, 'credit:' || h.credit_id AS chain,
                   to_jsonb(h) AS entry,
                   '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea AS zero
            FROM h)
        INSERT INTO journal (chain, seq, source, source_id, entry,
                             prev_hash, hash)
        SELECT e.chain, 1, 'credit_history', e.id, e.entry, e.zero,
               journal_hash(e.chain, 1, e.zero, e.entry)
        FROM e;
        RETURN NEW;
    END IF;

    -- what a credit is about never changes after creation
    IF (NEW.kind, NEW.direction, NEW.original_credit_id, NEW.deposit_id,
        NEW.provider, NEW.provider_payment_id, NEW.mt5_server, NEW.mt5_login,
        NEW.amount_minor, NEW.currency, NEW.paid_amount_minor,
        NEW.paid_currency, NEW.fx_rate, NEW.fx_source, NEW.fx_at)
       IS DISTINCT FROM
       (OLD.kind, OLD.direction, OLD.original_credit_id, OLD.deposit_id,
        OLD.provider, OLD.provider_payment_id, OLD.mt5_server, OLD.mt5_login,
        OLD.amount_minor, OLD.currency, OLD.paid_amount_minor,
        OLD.paid_currency, OLD.fx_rate, OLD.fx_source, OLD.fx_at)
    THEN
        RAISE EXCEPTION 'credit % is immutable except for its state', OLD.id
            USING ERRCODE = 'MC011';
    END IF;

    -- a recorded deal ticket is evidence; it is never replaced
    IF OLD.mt5_deal_ticket IS NOT NULL
       AND NEW.mt5_deal_ticket IS DISTINCT FROM OLD.mt5_deal_ticket
    THEN
        RAISE EXCEPTION 'credit % already has deal ticket %',
                        OLD.id, OLD.mt5_deal_ticket
            USING ERRCODE = 'MC011';
    END IF;

    IF NEW.attempts < OLD.attempts THEN
        RAISE EXCEPTION 'credit % attempts cannot go down', OLD.id
            USING ERRCODE = 'MC011';
    END IF;

    IF NEW.status IS DISTINCT FROM OLD.status THEN
        IF NOT EXISTS (SELECT 1 FROM credit_transition
                       WHERE from_status = OLD.status
                         AND to_status = NEW.status)
        THEN
            RAISE EXCEPTION 'credit %: % -> % is not a legal transition',
                            OLD.id, OLD.status, NEW.status
                USING ERRCODE = 'MC012';
        END IF;

        -- the chain's end; this UPDATE holds the credit's row lock, which
        -- every writer of the chain takes
        SELECT j.seq, j.hash INTO v_seq, v_prev
        FROM journal j WHERE j.chain = ('credit:' || NEW.id) COLLATE "C"
        ORDER BY j.seq DESC LIMIT 1;

        WITH h AS (
            INSERT INTO credit_history (credit_id, from_status, to_status,
                                        attempts, actor, detail)
            VALUES (NEW.id, OLD.status, NEW.status, NEW.attempts,
                    credit_actor(), credit_detail())
            RETURNING *),
        e AS (
            SELECT h.id, 'credit:' || h.credit_id AS chain,
                   coalesce(v_seq, 0) + 1 AS seq, to_jsonb(h) AS entry,
                   coalesce(v_prev, '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea) AS prev
            FROM h)
        INSERT INTO journal (chain, seq, source, source_id, entry,
                             prev_hash, hash)
        SELECT e.chain, e.seq, 'credit_history', e.id, e.entry, e.prev,
               journal_hash(e.chain, e.seq, e.prev, e.entry)
        FROM e;
    END IF;

    NEW.updated_at := now();
    RETURN NEW;
END
$$;

-- 013's deposit_guard_and_log(), as 062 left it, the history row entered
CREATE OR REPLACE FUNCTION mt5credit.deposit_guard_and_log()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_entry   text;
    v_actor   text;
    v_detail  jsonb;
    v_seq     integer;
    v_prev    bytea;
BEGIN
    IF (NEW.client_id, NEW.idempotency_key, NEW.provider, NEW.mt5_server,
        NEW.mt5_login, NEW.amount_minor, NEW.currency, NEW.account_currency,
        NEW.credit_amount_minor, NEW.fx_rate, NEW.fx_source, NEW.fx_at,
        NEW.created_at)
       IS DISTINCT FROM
       (OLD.client_id, OLD.idempotency_key, OLD.provider, OLD.mt5_server,
        OLD.mt5_login, OLD.amount_minor, OLD.currency, OLD.account_currency,
        OLD.credit_amount_minor, OLD.fx_rate, OLD.fx_source, OLD.fx_at,
        OLD.created_at)
    THEN
        RAISE EXCEPTION 'deposit % is immutable except for its status',
                        OLD.id USING ERRCODE = 'MC050';
    END IF;

    IF NEW.status IS DISTINCT FROM OLD.status THEN
        IF NOT EXISTS (SELECT 1 FROM deposit_transition
                       WHERE from_status = OLD.status
                         AND to_status = NEW.status)
        THEN
            RAISE EXCEPTION 'deposit %: % -> % is not a legal transition',
                            OLD.id, OLD.status, NEW.status
                USING ERRCODE = 'MC051';
        END IF;

        v_entry := batch_entry('d' || OLD.id::text);
        IF v_entry IS NULL THEN
            v_actor := credit_actor();
            v_detail := credit_detail();
        ELSE
            v_actor := split_part(v_entry, chr(31), 1);
            v_detail := jsonb_build_object(
                'credit', split_part(v_entry, chr(31), 2)::bigint,
                'payment', split_part(v_entry, chr(31), 3),
                'source', 'credit:' || split_part(v_entry, chr(31), 2));
        END IF;

        -- from created, the deposit's first row: entry 1; else the
        -- chain's end, ordered by the deposit's row lock this UPDATE holds
        IF OLD.status <> 'created' THEN
            SELECT j.seq, j.hash INTO v_seq, v_prev
            FROM journal j WHERE j.chain = ('deposit:' || OLD.id) COLLATE "C"
            ORDER BY j.seq DESC LIMIT 1;
        END IF;

        WITH h AS (
            INSERT INTO deposit_history (deposit_id, from_status, to_status,
                                         actor, detail)
            VALUES (OLD.id, OLD.status, NEW.status, v_actor, v_detail)
            RETURNING *),
        e AS (
            SELECT h.id, 'deposit:' || h.deposit_id AS chain,
                   coalesce(v_seq, 0) + 1 AS seq, to_jsonb(h) AS entry,
                   coalesce(v_prev, '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea) AS prev
            FROM h)
        INSERT INTO journal (chain, seq, source, source_id, entry,
                             prev_hash, hash)
        SELECT e.chain, e.seq, 'deposit_history', e.id, e.entry, e.prev,
               journal_hash(e.chain, e.seq, e.prev, e.entry)
        FROM e;
    END IF;

    RETURN NEW;
END
$$;

DROP TRIGGER credit_history_journal ON mt5credit.credit_history;
DROP TRIGGER deposit_history_journal ON mt5credit.deposit_history;

-- The trigger of the other chained tables: TG_ARGV[0] names the column
-- whose value is the chain's entity ('id': the row itself), TG_ARGV[1]
-- the chain's kind.  A row's own chain starts with its INSERT (083); an
-- UPDATE of it holds the row's lock, which orders that chain's writers;
-- any other chain's writers take turns on an advisory lock.  The fact's
-- text is the writer's (timestamps in its session's zone); its value is
-- what the verifier compares.
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
        IF TG_ARGV[0] <> 'id' THEN
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
            v_entry, v_prev, journal_hash(v_chain, v_seq, v_prev, v_entry));
    RETURN NULL;
END
$$;

-- A statement's stored webhooks, each the first entry of its own chain,
-- in one INSERT, in id order (088)
CREATE OR REPLACE FUNCTION mt5credit.journal_record_events() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    INSERT INTO journal (chain, seq, source, source_id, entry, prev_hash,
                         hash)
    SELECT f.chain, 1, 'webhook_event', f.id, f.entry, f.zero,
           journal_hash(f.chain, 1, f.zero, f.entry)
    FROM (SELECT n.id, 'event:' || n.id AS chain,
                 journal_event_fact(n::webhook_event) AS entry,
                 '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea AS zero
          FROM new_events n) f
    ORDER BY f.id;
    RETURN NULL;
END
$$;

-- An entry appended by hand (081), its chain's writers taking turns
CREATE OR REPLACE FUNCTION mt5credit.journal_append(p_chain text,
                                                   p_source text,
                                                   p_source_id bigint,
                                                   p_entry jsonb)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    v_seq   integer;
    v_prev  bytea;
BEGIN
    PERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended(
                'mt5credit.journal:' || p_chain, 0));
    SELECT j.seq, j.hash INTO v_seq, v_prev
    FROM mt5credit.journal j WHERE j.chain = p_chain COLLATE "C"
    ORDER BY j.seq DESC LIMIT 1;

    v_seq := coalesce(v_seq, 0) + 1;
    v_prev := coalesce(v_prev, '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea);

    INSERT INTO mt5credit.journal (chain, seq, source, source_id, entry,
                                   prev_hash, hash)
    VALUES (p_chain, v_seq, p_source, p_source_id, p_entry, v_prev,
            mt5credit.journal_hash(p_chain, v_seq, v_prev, p_entry));
END
$$;

RESET ROLE;
