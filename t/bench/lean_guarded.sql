-- make bench: the lean function again, on tables carrying ingest()'s
-- constraints.
--
-- The tables are copies of mt5credit's (LIKE ... INCLUDING ALL: every
-- CHECK, default, generated column, identity and index), without their
-- foreign keys and triggers; the function writes what lean.ingest()
-- writes, with the columns ingest() fills, the history rows as plain
-- statements.  Between lean.ingest() and mt5credit.ingest() it tells
-- what the row constraints cost from what the rest costs (triggers,
-- foreign keys, the facts of every event type, cases).
--
-- Loaded by t/bench/edge_bench.pl after sql/; never part of sql/.

CREATE SCHEMA lean_guarded;

CREATE TABLE lean_guarded.deposit
    (LIKE mt5credit.deposit INCLUDING ALL);
CREATE TABLE lean_guarded.webhook_event
    (LIKE mt5credit.webhook_event INCLUDING ALL);
CREATE TABLE lean_guarded.mt5_credit
    (LIKE mt5credit.mt5_credit INCLUDING ALL);
CREATE TABLE lean_guarded.credit_history
    (LIKE mt5credit.credit_history INCLUDING ALL);
CREATE TABLE lean_guarded.deposit_history
    (LIKE mt5credit.deposit_history INCLUDING ALL);

CREATE FUNCTION lean_guarded.ingest(p_provider text, p_raw_body bytea,
                                    p_signed_at bigint)
RETURNS text
LANGUAGE plpgsql
AS $$
DECLARE
    b      jsonb := convert_from(p_raw_body, 'UTF8')::jsonb;
    o      jsonb := b #> '{data,object}';
    d      lean_guarded.deposit;
    v_ev   bigint;
    v_cr   bigint;
BEGIN
    INSERT INTO lean_guarded.webhook_event (provider, provider_event_id,
        event_type, raw_body, body_sha256, signature_scheme, signed_at,
        disposition)
    VALUES (p_provider, b->>'id', b->>'type', p_raw_body, sha256(p_raw_body),
            'stripe', to_timestamp(p_signed_at), 'ignored')
    ON CONFLICT DO NOTHING
    RETURNING id INTO v_ev;
    IF v_ev IS NULL THEN
        RETURN 'duplicate';
    END IF;

    SELECT * INTO d FROM lean_guarded.deposit
    WHERE reference = o #>> '{metadata,deposit_id}' FOR UPDATE;
    IF NOT FOUND OR d.provider <> p_provider
       OR d.amount_minor <> (o->>'amount_received')::bigint
       OR d.currency <> upper(o->>'currency')
    THEN
        RETURN 'mismatch';
    END IF;

    INSERT INTO lean_guarded.mt5_credit (kind, direction, deposit_id,
        provider, provider_payment_id, mt5_server, mt5_login, amount_minor,
        currency, paid_amount_minor, paid_currency)
    VALUES ('deposit', 'credit', d.id, p_provider, o->>'id', d.mt5_server,
            d.mt5_login, d.credit_amount_minor, d.account_currency,
            d.amount_minor, d.currency)
    RETURNING id INTO v_cr;

    INSERT INTO lean_guarded.credit_history (credit_id, from_status,
        to_status, attempts, actor)
    VALUES (v_cr, NULL, 'pending', 0, 'ingest');

    UPDATE lean_guarded.deposit SET status = 'succeeded', updated_at = now()
    WHERE id = d.id;
    INSERT INTO lean_guarded.deposit_history (deposit_id, from_status,
        to_status, actor)
    VALUES (d.id, d.status, 'succeeded', 'ingest');

    UPDATE lean_guarded.webhook_event SET disposition = 'credit_created',
                                          credit_id = v_cr
    WHERE id = v_ev;
    RETURN 'credit_created';
END
$$;
