--
-- 090: a payer's name is not kept for ever either.
--
-- 082 keeps the name a provider signed for the payer on the deposit's
-- credit while the payer_name rule judges it, and never lets it change.
-- Retention (070, 074) empties an old event's body, which holds that
-- name, and left the copy on the credit: the one piece of the body's
-- personal data that outlived it.  Once its event's body is emptied, the
-- credit needs the name no more: the rule judged it when the credit was
-- born, a held credit is never finished (so never redacted), and a
-- person reads the evidence of a hold while it is open.
--
-- So retention_redact(days) now erases the payer's name of each credit
-- whose event's body it empties, in the same transaction, and says how
-- many.  The credit's
-- card (instrument) and the provider's flag stay: the first_instrument
-- rule compares a new card with a client's old ones, and a provider's
-- fingerprint or flag names nobody.
--
-- The name still never changes otherwise: credit_risk_facts_fixed()
-- allows one update, the name to NULL with payer_name_erased_at set, and
-- refuses any other, the owner's included.  A credit's history and the
-- money journal never held the name (the journal chains the history
-- rows), so nothing there changes.
--
-- Re-declared, this file holds their current definitions:
--   credit_risk_facts_fixed()    (082's, allowing the erasure)
--   mt5_credit_risk_facts_fixed  (082's trigger, over the new column too)
--   retention_redact()           (074's, erasing payers' names)
--

ALTER TABLE mt5credit.mt5_credit
    ADD COLUMN payer_name_erased_at timestamptz,
    ADD CONSTRAINT mt5_credit_payer_name_erased
        CHECK (payer_name_erased_at IS NULL OR payer_name IS NULL);

COMMENT ON COLUMN mt5credit.mt5_credit.payer_name_erased_at IS
    'When retention erased payer_name, its event''s body emptied (090).';

-- what the provider signed of a credit never changes, except that
-- retention erases the payer's name once
CREATE OR REPLACE FUNCTION mt5credit.credit_risk_facts_fixed()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    IF OLD.payer_name IS NOT NULL AND NEW.payer_name IS NULL
       AND OLD.payer_name_erased_at IS NULL
       AND NEW.payer_name_erased_at IS NOT NULL
       AND (NEW.instrument, NEW.provider_signal)
           IS NOT DISTINCT FROM (OLD.instrument, OLD.provider_signal)
    THEN
        RETURN NEW;
    END IF;

    RAISE EXCEPTION 'credit %: what the provider signed of it never changes',
                    OLD.id
        USING ERRCODE = 'MC011';
END
$$;

DROP TRIGGER mt5_credit_risk_facts_fixed ON mt5credit.mt5_credit;
CREATE TRIGGER mt5_credit_risk_facts_fixed
    BEFORE UPDATE OF payer_name, instrument, provider_signal,
                     payer_name_erased_at
    ON mt5credit.mt5_credit
    FOR EACH ROW
    WHEN ((OLD.payer_name, OLD.instrument, OLD.provider_signal,
           OLD.payer_name_erased_at)
          IS DISTINCT FROM (NEW.payer_name, NEW.instrument,
                            NEW.provider_signal, NEW.payer_name_erased_at))
    EXECUTE FUNCTION mt5credit.credit_risk_facts_fixed();

-- its result gains a column: made again, with its grant
DROP FUNCTION mt5credit.retention_redact(integer);

CREATE FUNCTION mt5credit.retention_redact(p_days integer)
RETURNS TABLE (redacted bigint, held_by_cases bigint, conflicts bigint,
               malformed bigint, names_erased bigint)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_before  timestamptz;
BEGIN
    IF p_days IS NULL OR p_days < 90 OR p_days > 3650 THEN
        RAISE EXCEPTION 'retention: bodies are kept 90 to 3650 days, not %',
                        coalesce(p_days::text, 'none')
            USING ERRCODE = 'MC150',
                  HINT = 'reconciliation looks back 62 days and replays '
                         'settled events';
    END IF;

    v_before := clock_timestamp() - make_interval(days => p_days);

    CREATE TEMP TABLE retention_old ON COMMIT DROP AS
    SELECT e.id,
           EXISTS (SELECT 1 FROM "case" k
                   WHERE k.status <> 'resolved'
                     AND (k.webhook_event_id = e.id
                          OR (e.credit_id IS NOT NULL
                              AND k.credit_id = e.credit_id))) AS held
    FROM webhook_event e
    LEFT JOIN mt5_credit c ON c.id = e.credit_id
    WHERE e.received_at < v_before
      AND e.body_redacted_at IS NULL
      AND (c.id IS NULL OR c.status IN ('done', 'failed'));

    UPDATE webhook_event e
    SET raw_body = ''::bytea, body_redacted_at = clock_timestamp()
    FROM retention_old o
    WHERE e.id = o.id AND NOT o.held;
    GET DIAGNOSTICS redacted = ROW_COUNT;

    UPDATE webhook_event_conflict x
    SET raw_body = ''::bytea, body_redacted_at = clock_timestamp()
    FROM retention_old o
    WHERE x.event_id = o.id AND NOT o.held AND x.body_redacted_at IS NULL;
    GET DIAGNOSTICS conflicts = ROW_COUNT;

    SELECT count(*) INTO held_by_cases FROM retention_old WHERE held;

    -- 074: by its latest delivery, which a provider may still repeat
    UPDATE webhook_malformed m
    SET raw_body = ''::bytea, body_redacted_at = clock_timestamp()
    WHERE m.last_received_at < v_before AND m.body_redacted_at IS NULL;
    GET DIAGNOSTICS malformed = ROW_COUNT;

    -- 090: the payer's name on a credit whose event's body this run
    -- emptied (a body kept for a case is emptied, and the name erased,
    -- by the run after the case is resolved)
    UPDATE mt5_credit c
    SET payer_name = NULL, payer_name_erased_at = clock_timestamp()
    FROM retention_old o
    JOIN webhook_event e ON e.id = o.id
    WHERE NOT o.held AND c.id = e.credit_id AND c.payer_name IS NOT NULL;
    GET DIAGNOSTICS names_erased = ROW_COUNT;

    RETURN NEXT;
END
$$;

COMMENT ON FUNCTION mt5credit.retention_redact(integer) IS
    'Empties the bodies of events older than p_days (90..3650) that no '
    'open case and no unfinished credit needs, and of malformed deliveries '
    'last delivered before then; their digests stay (070, 074).  Erases '
    'the payer''s name of each credit whose event''s body it empties (090)';

REVOKE ALL ON FUNCTION mt5credit.retention_redact(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mt5credit.retention_redact(integer)
    TO mt5credit_retention;
