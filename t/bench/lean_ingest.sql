-- make bench: the limit ingest() is measured against.
--
-- A lean plpgsql function doing the same writes as ingest() does for a
-- paid Stripe event, on plain tables of its own with the same keys: no
-- triggers, no guards, no cases, no other providers.  It is what the
-- database costs for these rows, the floor under any ingest():
--   - the event row with its raw body and SHA-256, unique per (provider,
--     event id);
--   - the deposit looked up by reference, locked, checked (provider,
--     amount, currency);
--   - the credit, unique per (provider, payment) and per deposit, with
--     its reference and its foreign key to the deposit;
--   - the credit's history row and the deposit's history row;
--   - the deposit moved to succeeded and the event given its credit.
--
-- Loaded by t/bench/edge_bench.pl into schema lean; never part of sql/.

CREATE SCHEMA lean;

CREATE TABLE lean.deposit (
    id                   bigint PRIMARY KEY,
    reference            text NOT NULL UNIQUE,
    provider             text NOT NULL,
    mt5_server           text NOT NULL,
    mt5_login            bigint NOT NULL,
    amount_minor         bigint NOT NULL,
    currency             text NOT NULL,
    credit_amount_minor  bigint NOT NULL,
    status               text NOT NULL DEFAULT 'created',
    updated_at           timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE lean.credit (
    id                   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    deposit_id           bigint NOT NULL UNIQUE REFERENCES lean.deposit,
    provider             text NOT NULL,
    provider_payment_id  text NOT NULL,
    reference            text NOT NULL UNIQUE,
    mt5_server           text NOT NULL,
    mt5_login            bigint NOT NULL,
    amount_minor         bigint NOT NULL,
    currency             text NOT NULL,
    status               text NOT NULL DEFAULT 'pending',
    created_at           timestamptz NOT NULL DEFAULT now(),
    UNIQUE (provider, provider_payment_id)
);

CREATE TABLE lean.webhook_event (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider           text NOT NULL,
    provider_event_id  text NOT NULL,
    event_type         text,
    raw_body           bytea NOT NULL,
    body_sha256        bytea NOT NULL,
    signed_at          timestamptz,
    received_at        timestamptz NOT NULL DEFAULT now(),
    disposition        text NOT NULL,
    credit_id          bigint REFERENCES lean.credit,
    UNIQUE (provider, provider_event_id)
);

CREATE TABLE lean.credit_history (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    credit_id   bigint NOT NULL REFERENCES lean.credit,
    to_status   text NOT NULL,
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor       text NOT NULL
);

CREATE TABLE lean.deposit_history (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    deposit_id  bigint NOT NULL REFERENCES lean.deposit,
    from_status text NOT NULL,
    to_status   text NOT NULL,
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor       text NOT NULL
);

CREATE FUNCTION lean.ingest(p_provider text, p_raw_body bytea,
                            p_signed_at bigint)
RETURNS text
LANGUAGE plpgsql
AS $$
DECLARE
    b      jsonb := convert_from(p_raw_body, 'UTF8')::jsonb;
    o      jsonb := b #> '{data,object}';
    d      lean.deposit;
    v_ev   bigint;
    v_cr   bigint;
BEGIN
    INSERT INTO lean.webhook_event (provider, provider_event_id, event_type,
                                    raw_body, body_sha256, signed_at,
                                    disposition)
    VALUES (p_provider, b->>'id', b->>'type', p_raw_body, sha256(p_raw_body),
            to_timestamp(p_signed_at), 'ignored')
    ON CONFLICT DO NOTHING
    RETURNING id INTO v_ev;
    IF v_ev IS NULL THEN
        RETURN 'duplicate';
    END IF;

    SELECT * INTO d FROM lean.deposit
    WHERE reference = o #>> '{metadata,deposit_id}' FOR UPDATE;
    IF NOT FOUND OR d.provider <> p_provider
       OR d.amount_minor <> (o->>'amount_received')::bigint
       OR d.currency <> upper(o->>'currency')
    THEN
        RETURN 'mismatch';
    END IF;

    INSERT INTO lean.credit (deposit_id, provider, provider_payment_id,
                             reference, mt5_server, mt5_login, amount_minor,
                             currency)
    VALUES (d.id, p_provider, o->>'id', 'dep:' || d.id, d.mt5_server,
            d.mt5_login, d.credit_amount_minor, d.currency)
    RETURNING id INTO v_cr;

    INSERT INTO lean.credit_history (credit_id, to_status, actor)
    VALUES (v_cr, 'pending', 'ingest');

    UPDATE lean.deposit SET status = 'succeeded', updated_at = now()
    WHERE id = d.id;
    INSERT INTO lean.deposit_history (deposit_id, from_status, to_status,
                                      actor)
    VALUES (d.id, d.status, 'succeeded', 'ingest');

    UPDATE lean.webhook_event SET disposition = 'credit_created',
                                  credit_id = v_cr
    WHERE id = v_ev;
    RETURN 'credit_created';
END
$$;
