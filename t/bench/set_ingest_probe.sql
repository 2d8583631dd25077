-- make bench: what a set-based ingest of paid Stripe events would cost on
-- mt5credit's own tables, with every CHECK, index, foreign key and trigger
-- they carry.  A measurement, not the product: loaded by
-- t/bench/edge_bench.pl after sql/, never part of sql/, and called by
-- nothing but pgbench.
--
-- Why it exists: ingest() takes one event per call, and PostgreSQL pays a
-- statement's fixed costs once per row then.  perf on a backend writing
-- these tables shows pg_strtok, strtol and nodeRead at the top: every
-- INSERT and UPDATE executor reads the table's CHECK expressions back
-- from their stored node strings (about 18 kB of them for mt5_credit,
-- 40 kB for one ingest()) and plans them again.  One statement for K rows
-- pays that once.  This function writes what ingest() writes for K paid
-- events in four statements:
--   - the events, each already naming the credit drawn for it;
--   - the deposits, locked in id order (two batches never deadlock);
--   - the credits (their AFTER INSERT trigger writes the history rows);
--   - the deposits moved to succeeded (their BEFORE UPDATE trigger
--     checks the transition and writes the deposit history).
--
-- What it leaves out, and a product ingest_batch() must add: the facts of
-- other event types and providers, duplicates and body conflicts, cases,
-- one event's failure kept from the others (each falls back to ingest()
-- in a subtransaction of its own), and the history's actor per row: here
-- every row of a batch has the batch's actor, where ingest() writes
-- ingest:<provider>:<event id>.  docs/scaling.md has the design.
--
-- Returns how many of the K events made a credit; the bench checks it is
-- all of them.

CREATE FUNCTION mt5credit.bench_set_ingest(p_bodies bytea[],
                                           p_signed_at bigint)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_made  integer;
BEGIN
    PERFORM set_config('synchronous_commit', 'on', true);
    PERFORM set_config('mt5credit.actor', 'ingest:stripe:batch', true);

    WITH src AS MATERIALIZED (
        SELECT u.raw, sha256(u.raw) AS sha, j->>'id' AS event_id,
               j->>'type' AS event_type, j #>> '{data,object,id}' AS payment,
               j #>> '{data,object,metadata,deposit_id}' AS deposit_ref,
               (j #>> '{data,object,amount_received}')::bigint AS amount,
               upper(j #>> '{data,object,currency}') AS currency,
               nextval('mt5credit.mt5_credit_id_seq') AS credit_id
        FROM unnest(p_bodies) AS u(raw),
             LATERAL (SELECT convert_from(u.raw, 'UTF8')::jsonb AS j) b),
    dep AS MATERIALIZED (
        SELECT d.*
        FROM deposit d
        WHERE d.reference IN (SELECT deposit_ref FROM src)
        ORDER BY d.id
        FOR UPDATE),
    paid AS MATERIALIZED (
        SELECT src.*, dep.id AS deposit_id, dep.status AS deposit_status
        FROM src JOIN dep ON dep.reference = src.deposit_ref
        WHERE dep.provider = 'stripe' AND dep.amount_minor = src.amount
          AND dep.currency = src.currency
          AND dep.status IN ('created', 'pending')),
    ev AS (
        INSERT INTO webhook_event (provider, provider_event_id, event_type,
                                   raw_body, body_sha256, signature_scheme,
                                   signed_at, disposition, credit_id)
        SELECT 'stripe', event_id, event_type, raw, sha, 'stripe',
               to_timestamp(p_signed_at), 'credit_created', credit_id
        FROM paid
        RETURNING id),
    cr AS (
        INSERT INTO mt5_credit (id, kind, direction, deposit_id, provider,
                                provider_payment_id, mt5_server, mt5_login,
                                amount_minor, currency, paid_amount_minor,
                                paid_currency, fx_rate, fx_source, fx_at)
        OVERRIDING SYSTEM VALUE
        SELECT paid.credit_id, 'deposit', 'credit', dep.id, 'stripe',
               paid.payment, dep.mt5_server, dep.mt5_login,
               dep.credit_amount_minor, dep.account_currency, paid.amount,
               paid.currency, dep.fx_rate, dep.fx_source, dep.fx_at
        FROM paid JOIN dep ON dep.id = paid.deposit_id
        RETURNING id),
    up AS (
        UPDATE deposit SET status = 'succeeded', updated_at = now()
        FROM paid
        WHERE deposit.id = paid.deposit_id
          AND deposit.status = paid.deposit_status
        RETURNING deposit.id)
    SELECT least((SELECT count(*) FROM ev), (SELECT count(*) FROM cr),
                 (SELECT count(*) FROM up))
    INTO v_made;

    RETURN v_made;
END
$$;
