--
-- 012: deposit references past deposit 999,999.
--
-- 003 generated 'dep_' || lpad(id, 6, '0'), and lpad() cuts a longer
-- string to the length asked for: deposit 1,000,000 would have been
-- dep_100000, the reference of deposit 100,000, and the unique constraint
-- would have refused every deposit from then on (found by the
-- reconciliation benchmark, which makes a million).  The reference is
-- now padded to six digits and never cut.  Every existing reference is
-- unchanged: below a million the two expressions agree.
--

ALTER TABLE mt5credit.deposit DROP COLUMN reference;

ALTER TABLE mt5credit.deposit
    ADD COLUMN reference text NOT NULL UNIQUE
        GENERATED ALWAYS AS (
            'dep_' || CASE WHEN id < 1000000 THEN lpad(id::text, 6, '0')
                           ELSE id::text END) STORED;
