--
-- 002: currencies and their minor units.
--
-- Every amount in this schema is an integer count of minor units of a
-- currency named next to it.  minor_digits says where the decimal point
-- goes (USD 2: 12345 is 123.45; JPY 0; BHD 3).  A currency must be listed
-- here before any amount may use it: a foreign key on every currency
-- column makes an amount in an unknown unit unrepresentable.
--
-- Codes are ISO 4217 where one exists.  MT5 cent accounts use USC/EUC
-- (one unit = one cent of USD/EUR).  Conversion between currencies happens
-- exactly once, when a deposit is created (003), never here.

CREATE TABLE mt5credit.currency (
    code          text     PRIMARY KEY
                  CHECK (code ~ '^[A-Z][A-Z0-9]{2,9}$'),
    minor_digits  smallint NOT NULL
                  CHECK (minor_digits BETWEEN 0 AND 8),
    name          text     NOT NULL
);

COMMENT ON TABLE mt5credit.currency IS
    'Currencies an amount may be in; minor_digits places the decimal point.';

INSERT INTO mt5credit.currency (code, minor_digits, name) VALUES
    ('USD', 2, 'US dollar'),
    ('EUR', 2, 'euro'),
    ('GBP', 2, 'pound sterling'),
    ('CHF', 2, 'Swiss franc'),
    ('JPY', 0, 'yen'),
    ('CNY', 2, 'yuan renminbi'),
    ('HKD', 2, 'Hong Kong dollar'),
    ('SGD', 2, 'Singapore dollar'),
    ('AUD', 2, 'Australian dollar'),
    ('NZD', 2, 'New Zealand dollar'),
    ('CAD', 2, 'Canadian dollar'),
    ('SEK', 2, 'Swedish krona'),
    ('NOK', 2, 'Norwegian krone'),
    ('DKK', 2, 'Danish krone'),
    ('PLN', 2, 'zloty'),
    ('CZK', 2, 'Czech koruna'),
    ('HUF', 2, 'forint'),
    ('TRY', 2, 'Turkish lira'),
    ('ZAR', 2, 'rand'),
    ('AED', 2, 'UAE dirham'),
    ('SAR', 2, 'Saudi riyal'),
    ('INR', 2, 'Indian rupee'),
    ('IDR', 2, 'rupiah'),
    ('THB', 2, 'baht'),
    ('MYR', 2, 'ringgit'),
    ('PHP', 2, 'Philippine peso'),
    ('MXN', 2, 'Mexican peso'),
    ('BRL', 2, 'Brazilian real'),
    ('KRW', 0, 'won'),
    ('VND', 0, 'dong'),
    ('CLP', 0, 'Chilean peso'),
    ('BHD', 3, 'Bahraini dinar'),
    ('KWD', 3, 'Kuwaiti dinar'),
    ('JOD', 3, 'Jordanian dinar'),
    ('OMR', 3, 'Rial Omani'),
    ('USC', 2, 'US cent (MT5 cent account)'),
    ('EUC', 2, 'euro cent (MT5 cent account)'),
    ('USDT', 6, 'Tether USD'),
    ('USDC', 6, 'USD Coin'),
    ('BTC', 8, 'bitcoin'),
    ('ETH', 8, 'ether (to 8 places, as MT5 shows it)');

GRANT SELECT ON mt5credit.currency TO mt5credit_portal, mt5credit_worker,
    mt5credit_operator, mt5credit_reader;
