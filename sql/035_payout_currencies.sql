--
-- 035: a withdrawal is accepted only in a currency its payout provider
-- can pay.
--
-- The MT5 debit is made first and the payout after it (017, 018): a
-- withdrawal in a currency the provider cannot pay out was debited from
-- the client, then declined by the provider, and two people had to give
-- the money back.  Now the currencies each payout provider pays out are
-- listed, and a withdrawal outside the list is refused when it is
-- requested, and again when it is prepared or approved (the list may have
-- changed meanwhile): before anything is debited.
--
-- The list is configuration of the deployment, changed by the schema
-- owner (mt5credit_owner) like the currency table, never by a program
-- or a desk role.  The rows below are the ones the demo and the tests pay
-- out through the simulated Stripe account; a deployment lists its own
-- account's payout currencies (docs/operations.md).
--

CREATE TABLE mt5credit.payout_currency (
    provider  text NOT NULL CHECK (provider ~ '^[a-z][a-z0-9_-]{0,31}$'),
    currency  text NOT NULL REFERENCES mt5credit.currency (code),
    PRIMARY KEY (provider, currency)
);

COMMENT ON TABLE mt5credit.payout_currency IS
    'The currencies each payout provider can pay out; a withdrawal in any '
    'other is refused before its MT5 debit (035).';

INSERT INTO mt5credit.payout_currency (provider, currency) VALUES
    ('stripe', 'USD'),
    ('stripe', 'EUR'),
    ('stripe', 'GBP');


CREATE FUNCTION mt5credit.withdrawal_payable()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM payout_currency
                   WHERE provider = NEW.provider
                     AND currency = NEW.currency)
    THEN
        RAISE EXCEPTION 'withdrawal %: % cannot pay out %; refused before '
                        'anything is debited', coalesce(NEW.reference, 'new'),
                        NEW.provider, NEW.currency
            USING ERRCODE = 'MC083',
                  HINT = 'the currencies a provider pays out are listed in '
                         'mt5credit.payout_currency';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER withdrawal_payable
    BEFORE INSERT OR UPDATE OF status, provider, currency
    ON mt5credit.withdrawal
    FOR EACH ROW
    WHEN (NEW.status IN ('requested', 'prepared', 'approved'))
    EXECUTE FUNCTION mt5credit.withdrawal_payable();

GRANT SELECT ON mt5credit.payout_currency
    TO mt5credit_portal, mt5credit_operator, mt5credit_reader;
