-- migrate: as-migrator
--
-- 081: a tamper-evident money journal (issue 33, part 2; docs/security.md).
--
-- Every fact that moves or decides money is written twice in its own
-- transaction: in its table, and as an entry of a hash chain here.  A
-- chain is one entity's (a credit's history, a deposit's, a payout's, a
-- refund leg's, a case's actions, a withdrawal's states, a proposal's, a
-- rule change's, a stored webhook's digest), so no two ingests wait on
-- one row:
--
--   hash = sha256(prev_hash || chain || '\n' || seq || '\n' || entry)
--
-- where entry is the fact as jsonb text, as its writer rendered it, and
-- the first prev_hash is 32 zero bytes.  The verifier hashes that text,
-- and compares the fact with the row through the row's type, so the
-- writer's time zone does not matter.
--
-- What makes it evidence is outside the database: `mt5credit audit seal`
-- closes a period (every entry whose transaction finished before the
-- seal's snapshot: xid8 below its xmin, so none can appear later) into an
-- RFC 6962 Merkle root, chains the period heads, signs each with an
-- Ed25519 key that is not on the database host, and appends it to a file
-- the database's superuser cannot reach.  `mt5credit audit verify`
-- recomputes every chain, compares each fact with its entry, and each
-- sealed period with its signed head.  It logs in as mt5credit_audit,
-- which may read the journal and the chained tables and do nothing else.
--
-- An UPDATE, DELETE or INSERT that goes around the triggers (a superuser
-- can) leaves a fact without its entry, an entry without its fact, or a
-- fact unlike its entry; rewriting the entries too changes a signed root.
--

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'mt5credit_audit')
    THEN
        CREATE ROLE mt5credit_audit NOLOGIN;
    END IF;
END
$$;

GRANT USAGE ON SCHEMA mt5credit TO mt5credit_audit;

SET ROLE mt5credit_owner;

CREATE TABLE mt5credit.journal (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- bytewise: a trigger's TG_ARGV hands its callee "C" text, and the
    -- lookup of a chain's end must use the index whatever the caller's
    chain       text COLLATE "C" NOT NULL
                CHECK (chain ~ '^[a-z_]+:[0-9]+$'),
    seq         integer NOT NULL CHECK (seq > 0),
    source      text NOT NULL,
    source_id   bigint NOT NULL,
    entry       jsonb NOT NULL,
    prev_hash   bytea NOT NULL CHECK (length(prev_hash) = 32),
    hash        bytea NOT NULL CHECK (length(hash) = 32),
    -- the writing transaction: a seal takes only finished ones
    xid         xid8 NOT NULL DEFAULT pg_current_xact_id(),
    UNIQUE (chain, seq)
);

COMMENT ON TABLE mt5credit.journal IS
    'The money journal (081): every chained fact as an entry of its '
    'entity''s hash chain, written in the fact''s transaction.  Sealed '
    'and signed outside the database by mt5credit audit seal.';

-- the periods: a seal reads its transactions' entries
CREATE INDEX journal_xid_idx ON mt5credit.journal (xid);

-- written by the triggers alone; an entry never changes or goes
CREATE TRIGGER journal_no_update
    BEFORE UPDATE OR DELETE ON mt5credit.journal
    FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();
CREATE TRIGGER journal_no_truncate
    BEFORE TRUNCATE ON mt5credit.journal
    FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();

-- What of a stored webhook is the fact: everything but its body, which
-- is not kept for ever (070), and when that went; its digest is.  Built
-- without the body (encoding it to drop it costs ingest).  The verifier
-- compares it with the row minus those two columns, so a column added to
-- webhook_event and not here is found at once.
CREATE FUNCTION mt5credit.journal_event_fact(e mt5credit.webhook_event)
RETURNS jsonb
LANGUAGE sql STABLE
AS $$
    SELECT jsonb_build_object(
               'id', e.id, 'provider', e.provider,
               'provider_event_id', e.provider_event_id,
               'event_type', e.event_type, 'body_sha256', e.body_sha256,
               'signature_scheme', e.signature_scheme,
               'signed_at', e.signed_at, 'received_at', e.received_at,
               'disposition', e.disposition, 'credit_id', e.credit_id,
               'detail', e.detail, 'request_id', e.request_id)
$$;

-- One entry at the end of its chain.  A chain's writers take turns: its
-- entity's row lock orders them already, the advisory lock when there is
-- none, and the unique (chain, seq) refuses a fork whatever happens.  No
-- SET clause and every name qualified: it runs inside the trigger's
-- settings, and one more switch of search_path an entry is measurable.
CREATE FUNCTION mt5credit.journal_append(p_chain text, p_source text,
    p_source_id bigint, p_entry jsonb)
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
            pg_catalog.sha256(v_prev || pg_catalog.convert_to(
                p_chain || E'\n' || v_seq || E'\n' || p_entry::text,
                'UTF8')));
END
$$;

-- The trigger of every chained table: TG_ARGV[0] names the column whose
-- value is the chain's entity ('id': the row itself), TG_ARGV[1] the
-- chain's kind.  The fact's text is the writer's (timestamps in its
-- session's zone); its value is what the verifier compares.
CREATE FUNCTION mt5credit.journal_record() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_entry  jsonb;
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
    PERFORM mt5credit.journal_append(TG_ARGV[1] || ':'
                                     || (v_entry->>TG_ARGV[0]),
                                     TG_TABLE_NAME,
                                     (v_entry->>'id')::bigint, v_entry);
    RETURN NULL;
END
$$;

-- histories: one entry per row, on the entity's chain
CREATE TRIGGER credit_history_journal
    AFTER INSERT ON mt5credit.credit_history
    FOR EACH ROW EXECUTE FUNCTION mt5credit.journal_record('credit_id',
                                                           'credit');
CREATE TRIGGER deposit_history_journal
    AFTER INSERT ON mt5credit.deposit_history
    FOR EACH ROW EXECUTE FUNCTION mt5credit.journal_record('deposit_id',
                                                           'deposit');
CREATE TRIGGER payout_history_journal
    AFTER INSERT ON mt5credit.payout_history
    FOR EACH ROW EXECUTE FUNCTION mt5credit.journal_record('payout_id',
                                                           'payout');
CREATE TRIGGER withdrawal_refund_history_journal
    AFTER INSERT ON mt5credit.withdrawal_refund_history
    FOR EACH ROW EXECUTE FUNCTION mt5credit.journal_record('refund_id',
                                                           'refund');
CREATE TRIGGER case_action_journal
    AFTER INSERT ON mt5credit.case_action
    FOR EACH ROW EXECUTE FUNCTION mt5credit.journal_record('case_id', 'case');

-- rows that change: each state an entry, on the row's own chain
CREATE TRIGGER withdrawal_journal
    AFTER INSERT OR UPDATE ON mt5credit.withdrawal
    FOR EACH ROW EXECUTE FUNCTION mt5credit.journal_record('id',
                                                           'withdrawal');
CREATE TRIGGER money_proposal_journal
    AFTER INSERT OR UPDATE ON mt5credit.money_proposal
    FOR EACH ROW EXECUTE FUNCTION mt5credit.journal_record('id', 'proposal');
CREATE TRIGGER risk_rule_change_journal
    AFTER INSERT OR UPDATE ON mt5credit.risk_rule_change
    FOR EACH ROW EXECUTE FUNCTION mt5credit.journal_record('id',
                                                           'rule_change');
CREATE TRIGGER webhook_event_journal
    AFTER INSERT OR UPDATE ON mt5credit.webhook_event
    FOR EACH ROW EXECUTE FUNCTION mt5credit.journal_record('id', 'event');

-- What was there before this migration is each chain's first entry, in
-- id order: the journal starts complete.
DO $$
DECLARE
    t  record;
BEGIN
    FOR t IN
        SELECT * FROM (VALUES
            ('credit_history', 'credit_id', 'credit', 'to_jsonb(x)'),
            ('deposit_history', 'deposit_id', 'deposit', 'to_jsonb(x)'),
            ('payout_history', 'payout_id', 'payout', 'to_jsonb(x)'),
            ('withdrawal_refund_history', 'refund_id', 'refund',
             'to_jsonb(x)'),
            ('case_action', 'case_id', 'case', 'to_jsonb(x)'),
            ('withdrawal', 'id', 'withdrawal', 'to_jsonb(x)'),
            ('money_proposal', 'id', 'proposal', 'to_jsonb(x)'),
            ('risk_rule_change', 'id', 'rule_change', 'to_jsonb(x)'),
            ('webhook_event', 'id', 'event',
             'mt5credit.journal_event_fact(x)'))
            v (source, entity, kind, fact)
    LOOP
        EXECUTE format(
            'SELECT mt5credit.journal_append(%L || '':'' || (r->>%L), %L, '
            '(r->>''id'')::bigint, r) '
            'FROM (SELECT %s AS r FROM mt5credit.%I x ORDER BY x.id) s',
            t.kind, t.entity, t.source, t.fact, t.source);
    END LOOP;
END
$$;

RESET ROLE;

-- the auditor reads, and only what it checks
REVOKE ALL ON FUNCTION mt5credit.journal_append(text, text, bigint, jsonb)
    FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.journal_event_fact(mt5credit.webhook_event)
    FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.journal_record() FROM PUBLIC;
GRANT SELECT ON mt5credit.journal, mt5credit.credit_history,
    mt5credit.deposit_history, mt5credit.payout_history,
    mt5credit.withdrawal_refund_history, mt5credit.case_action,
    mt5credit.withdrawal, mt5credit.money_proposal,
    mt5credit.risk_rule_change, mt5credit.webhook_event
    TO mt5credit_audit;
GRANT EXECUTE ON FUNCTION mt5credit.database_timeline_now()
    TO mt5credit_audit;
