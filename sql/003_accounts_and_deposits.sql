--
-- 003: which MT5 accounts a client owns, and deposits.
--
-- The MT5 login a payment is credited to comes from here and nowhere else:
-- never from the browser, never from free text in a provider payload.  A
-- deposit is created by our server when a logged-in client picks one of
-- their own accounts to fund; its reference travels through the provider
-- (Stripe client_reference_id / metadata.deposit_id) and comes back signed.
-- Any amount conversion happens here, once, and is stored with its rate,
-- the rate's source and time; a retry never recomputes it.

CREATE TABLE mt5credit.client_account (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    client_id   text        NOT NULL
                CHECK (length(client_id) BETWEEN 1 AND 128),
    mt5_server  text        NOT NULL
                CHECK (mt5_server ~ '^[a-z0-9][a-z0-9_.-]{0,62}$'),
    mt5_login   bigint      NOT NULL CHECK (mt5_login > 0),
    currency    text        NOT NULL REFERENCES mt5credit.currency (code),
    status      text        NOT NULL DEFAULT 'active'
                CHECK (status IN ('active', 'closed')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    closed_at   timestamptz,

    -- a login on a server belongs to exactly one client
    UNIQUE (mt5_server, mt5_login),
    -- target of deposit's composite key: login, owner and currency travel
    -- together, so a deposit cannot name a login of another client
    UNIQUE (mt5_server, mt5_login, client_id, currency),
    CHECK ((status = 'closed') = (closed_at IS NOT NULL))
);

COMMENT ON TABLE mt5credit.client_account IS
    'MT5 logins each client owns, as our server records it. '
    'The worker checks ownership here again right before each MT5 call.';


CREATE TABLE mt5credit.deposit (
    id                   bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- what the provider carries for us; generated, so it cannot disagree
    reference            text        NOT NULL UNIQUE
                         GENERATED ALWAYS AS
                             ('dep_' || lpad(id::text, 6, '0')) STORED,
    client_id            text        NOT NULL,
    idempotency_key      text        NOT NULL
                         CHECK (idempotency_key ~ '^[A-Za-z0-9_.:-]{8,128}$'),
    provider             text        NOT NULL
                         CHECK (provider ~ '^[a-z][a-z0-9_-]{0,31}$'),
    mt5_server           text        NOT NULL,
    mt5_login            bigint      NOT NULL,

    -- what the client is expected to pay
    amount_minor         bigint      NOT NULL CHECK (amount_minor > 0),
    currency             text        NOT NULL
                         REFERENCES mt5credit.currency (code),

    -- what the MT5 account receives, in the account's currency
    account_currency     text        NOT NULL
                         REFERENCES mt5credit.currency (code),
    credit_amount_minor  bigint      NOT NULL
                         CHECK (credit_amount_minor > 0),
    fx_rate              numeric     CHECK (fx_rate > 0),
    fx_source            text
                         CHECK (length(fx_source) BETWEEN 1 AND 200),
    fx_at                timestamptz,

    status               text        NOT NULL DEFAULT 'created'
                         CHECK (status IN ('created', 'pending', 'succeeded',
                                           'failed', 'closed')),
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),

    -- a double click makes one deposit
    UNIQUE (client_id, idempotency_key),
    -- the login must be one this client owns, in the account's currency
    FOREIGN KEY (mt5_server, mt5_login, client_id, account_currency)
        REFERENCES mt5credit.client_account
            (mt5_server, mt5_login, client_id, currency),
    -- target of mt5_credit's composite key
    UNIQUE (id, mt5_server, mt5_login, account_currency),

    -- a rate exists exactly when the currencies differ, with source and time
    CHECK ((currency = account_currency) = (fx_rate IS NULL)),
    CHECK ((fx_rate IS NULL) = (fx_source IS NULL)),
    CHECK ((fx_rate IS NULL) = (fx_at IS NULL)),
    CHECK (currency <> account_currency
           OR credit_amount_minor = amount_minor)
);

COMMENT ON TABLE mt5credit.deposit IS
    'A deposit our server created for a logged-in client: which of their '
    'MT5 accounts to fund, the expected payment and the converted credit.';
COMMENT ON COLUMN mt5credit.deposit.fx_rate IS
    'Units of account_currency per unit of currency (major units), '
    'exact decimal; NULL when no conversion happens.';
COMMENT ON COLUMN mt5credit.deposit.credit_amount_minor IS
    'amount_minor converted once at creation: '
    'round(amount * rate * 10^(account digits - payment digits)), '
    'half away from zero.';

CREATE INDEX deposit_client_idx ON mt5credit.deposit (client_id, created_at);


--
-- Converts an amount between currencies.  Exact decimal arithmetic only;
-- rounding half away from zero happens once, at the end.
--
CREATE FUNCTION mt5credit.convert_minor(p_amount_minor bigint,
    p_from text, p_to text, p_rate numeric)
RETURNS bigint
LANGUAGE sql STABLE STRICT
SET search_path = mt5credit, pg_temp
AS $$
    SELECT round(p_amount_minor * p_rate
                 * power(10::numeric, t.minor_digits - f.minor_digits))::bigint
    FROM currency f, currency t
    WHERE f.code = p_from AND t.code = p_to
$$;


--
-- register_account(): the portal records that a client owns an MT5 login.
-- Registering the same login for the same client again is a no-op; for
-- another client it is refused.
--
CREATE FUNCTION mt5credit.register_account(p_client_id text,
    p_mt5_server text, p_mt5_login bigint, p_currency text)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_id  bigint;
    v_acc client_account;
BEGIN
    INSERT INTO client_account (client_id, mt5_server, mt5_login, currency)
    VALUES (p_client_id, p_mt5_server, p_mt5_login, p_currency)
    ON CONFLICT (mt5_server, mt5_login) DO NOTHING
    RETURNING id INTO v_id;

    IF v_id IS NOT NULL THEN
        RETURN v_id;
    END IF;

    SELECT * INTO v_acc FROM client_account
    WHERE mt5_server = p_mt5_server AND mt5_login = p_mt5_login;

    IF v_acc.client_id <> p_client_id OR v_acc.currency <> p_currency THEN
        RAISE EXCEPTION 'MT5 login %/% is registered to another client or '
                        'currency', p_mt5_server, p_mt5_login
            USING ERRCODE = 'MC001';
    END IF;

    RETURN v_acc.id;
END
$$;


--
-- create_deposit(): called by the portal for a logged-in client.
--
-- The idempotency key comes from the client (one per "Deposit" button
-- press).  The same key with the same parameters returns the same deposit;
-- the same key with anything different is an error, never a second
-- deposit and never a silent change.  A login the client does not own, or
-- a closed account, is refused.
--
-- Errors (SQLSTATE): MC001 login not owned / account closed,
-- MC002 key reused with other parameters, MC003 bad FX parameters,
-- MC004 unknown currency.
--
CREATE FUNCTION mt5credit.create_deposit(
    p_client_id        text,
    p_idempotency_key  text,
    p_provider         text,
    p_mt5_server       text,
    p_mt5_login        bigint,
    p_amount_minor     bigint,
    p_currency         text,
    p_fx_rate          numeric     DEFAULT NULL,
    p_fx_source        text        DEFAULT NULL,
    p_fx_at            timestamptz DEFAULT NULL)
RETURNS mt5credit.deposit
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_acc     client_account;
    v_dep     deposit;
    v_credit  bigint;
BEGIN
    SELECT * INTO v_acc FROM client_account
    WHERE mt5_server = p_mt5_server AND mt5_login = p_mt5_login
      AND client_id = p_client_id AND status = 'active';

    IF NOT FOUND THEN
        RAISE EXCEPTION 'client % does not own an active MT5 account %/%',
                        p_client_id, p_mt5_server, p_mt5_login
            USING ERRCODE = 'MC001';
    END IF;

    IF NOT EXISTS (SELECT 1 FROM currency WHERE code = p_currency) THEN
        RAISE EXCEPTION 'unknown currency %', p_currency
            USING ERRCODE = 'MC004';
    END IF;

    IF p_currency = v_acc.currency THEN
        IF p_fx_rate IS NOT NULL OR p_fx_source IS NOT NULL
           OR p_fx_at IS NOT NULL
        THEN
            RAISE EXCEPTION 'no FX rate may be given: payment and account '
                            'are both in %', p_currency
                USING ERRCODE = 'MC003';
        END IF;

        v_credit := p_amount_minor;

    ELSE
        IF p_fx_rate IS NULL OR p_fx_source IS NULL OR p_fx_at IS NULL THEN
            RAISE EXCEPTION 'payment in % to an account in % needs an FX '
                            'rate with its source and time',
                            p_currency, v_acc.currency
                USING ERRCODE = 'MC003';
        END IF;

        v_credit := convert_minor(p_amount_minor, p_currency, v_acc.currency,
                                  p_fx_rate);

        IF v_credit IS NULL OR v_credit <= 0 THEN
            RAISE EXCEPTION 'converted amount % is not positive', v_credit
                USING ERRCODE = 'MC003';
        END IF;
    END IF;

    -- a repeat is answered from the row (and burns no identity value)
    SELECT * INTO v_dep FROM deposit
    WHERE client_id = p_client_id AND idempotency_key = p_idempotency_key;

    IF NOT FOUND THEN
        INSERT INTO deposit (client_id, idempotency_key, provider,
                             mt5_server, mt5_login, amount_minor, currency,
                             account_currency, credit_amount_minor, fx_rate,
                             fx_source, fx_at)
        VALUES (p_client_id, p_idempotency_key, p_provider, p_mt5_server,
                p_mt5_login, p_amount_minor, p_currency, v_acc.currency,
                v_credit, p_fx_rate, p_fx_source, p_fx_at)
        ON CONFLICT (client_id, idempotency_key) DO NOTHING
        RETURNING * INTO v_dep;

        IF v_dep.id IS NOT NULL THEN
            RETURN v_dep;
        END IF;

        -- a concurrent request with the same key won the race
        SELECT * INTO v_dep FROM deposit
        WHERE client_id = p_client_id
          AND idempotency_key = p_idempotency_key;
    END IF;

    -- the key was used before: same request or a different one?

    IF v_dep.provider IS DISTINCT FROM p_provider
       OR v_dep.mt5_server IS DISTINCT FROM p_mt5_server
       OR v_dep.mt5_login IS DISTINCT FROM p_mt5_login
       OR v_dep.amount_minor IS DISTINCT FROM p_amount_minor
       OR v_dep.currency IS DISTINCT FROM p_currency
       OR v_dep.fx_rate IS DISTINCT FROM p_fx_rate
       OR v_dep.fx_source IS DISTINCT FROM p_fx_source
       OR v_dep.fx_at IS DISTINCT FROM p_fx_at
    THEN
        RAISE EXCEPTION 'idempotency key % was already used for deposit % '
                        'with different parameters',
                        p_idempotency_key, v_dep.reference
            USING ERRCODE = 'MC002';
    END IF;

    RETURN v_dep;
END
$$;

GRANT EXECUTE ON FUNCTION
    mt5credit.register_account(text, text, bigint, text),
    mt5credit.create_deposit(text, text, text, text, bigint, bigint, text,
                             numeric, text, timestamptz)
    TO mt5credit_portal;
