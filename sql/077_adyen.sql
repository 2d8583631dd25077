--
-- 077: Adyen's standard notifications, as rules (docs/providers.md
-- "Adyen").
--
-- Adyen signs each NotificationRequestItem of a batch, not the request;
-- the edge (mt5_credit_signature adyen) verifies each item and stores it
-- as an event of its own: the item object's bytes as they arrived, under
-- the id pspReference:eventCode:success, which is how Adyen says one
-- notification is the same one again.  An item is read here through its
-- signed fields only (pspReference, originalReference, merchantReference,
-- amount.value, amount.currency, eventCode, success): nothing in
-- additionalData, which is not signed, decides anything.
--
-- Whether an authorisation is money depends on how the merchant account
-- captures, so there are two formats, and a provider name reads one:
--
--   adyen          automatic capture (Adyen's default): a successful
--                  AUTHORISATION will be captured, and Adyen sends no
--                  CAPTURE for it unless asked to, so it credits; a
--                  refused CAPTURE, a CAPTURE_FAILED or a CANCELLATION
--                  after it is money credited that will not arrive, a
--                  case for a person
--   adyen_manual   manual capture: an AUTHORISATION is held money, never
--                  a credit; a successful CAPTURE credits (its
--                  originalReference is the payment), CAPTURE_FAILED and
--                  CANCELLATION close the deposit
--
-- Both: REFUND and CANCEL_OR_REFUND (successful) debit, as a refund of
-- originalReference; REFUND_FAILED, after a refund was debited, is a case;
-- CHARGEBACK and SECOND_CHARGEBACK debit, CHARGEBACK_REVERSED credits
-- back, keyed on the dispute (a dispute notification's pspReference is
-- the dispute's, the same in all its events; its originalReference is
-- the disputed payment); a notification that says success "false" moves
-- nothing.  The payment's key everywhere is the authorisation's
-- pspReference.
--
-- New here: the adyen signature scheme in webhook_event's check (005's,
-- last 015's).
--

ALTER TABLE mt5credit.webhook_event
    DROP CONSTRAINT webhook_event_signature_scheme_check,
    ADD CONSTRAINT webhook_event_signature_scheme_check
        CHECK (signature_scheme IN ('stripe', 'standard', 'hmac-sha256',
                                    'api', 'adyen'));

-- the id is the edge's (pspReference:eventCode:success); this path is
-- only what ingest() falls back on without one
INSERT INTO mt5credit.payload_format (payload, event_id, event_type,
                                      event_part, about)
VALUES ('adyen', 'strict $.pspReference', 'strict $.eventCode', NULL,
        'Adyen''s notification items, automatic capture: a successful '
        'authorisation credits (docs/providers.md)'),
       ('adyen_manual', 'strict $.pspReference', 'strict $.eventCode', NULL,
        'Adyen''s notification items, manual capture: a successful '
        'capture credits (docs/providers.md)');

-- what both formats say alike: refunds, disputes, and what moves nothing
INSERT INTO mt5credit.payload_rule (payload, event_type, step, only_if,
    action, payment, key_prefix, key_suffix, original, deposit, amount,
    amount_form, currency, note_text)
SELECT f.payload, r.event_type, r.step, r.only_if::jsonpath, r.action,
       r.payment::jsonpath, r.key_prefix, r.key_suffix, r.original::jsonpath,
       r.deposit::jsonpath, r.amount::jsonpath, r.amount_form,
       r.currency::jsonpath, r.note_text
FROM (VALUES ('adyen'), ('adyen_manual')) f (payload),
     (VALUES
    ('REFUND', 1, '$.success == "true"', 'refund', 'strict $.pspReference',
     'refund:', '', 'strict $.originalReference', NULL,
     'strict $.amount.value', 'minor', 'strict $.amount.currency', NULL),
    ('REFUND', 2, NULL, 'ignore', NULL, '', '', NULL, NULL, NULL, NULL,
     NULL, 'a refund Adyen refused: nothing moved'),
    ('CANCEL_OR_REFUND', 1, '$.success == "true"', 'refund',
     'strict $.pspReference', 'refund:', '', 'strict $.originalReference',
     NULL, 'strict $.amount.value', 'minor', 'strict $.amount.currency',
     NULL),
    ('CANCEL_OR_REFUND', 2, NULL, 'ignore', NULL, '', '', NULL, NULL, NULL,
     NULL, NULL, 'a cancel or refund Adyen refused: nothing moved'),
    -- the refund was debited when it was accepted; the money did not go
    ('REFUND_FAILED', 1, NULL, 'review', 'strict $.pspReference', 'refund:',
     '', NULL, NULL, 'strict $.amount.value', 'minor',
     'strict $.amount.currency',
     'a refund debited here failed at Adyen: the client was not paid back'),
    ('CHARGEBACK', 1, '$.success == "true"', 'chargeback',
     'strict $.pspReference', 'chargeback:', '',
     'strict $.originalReference',
     NULL, 'strict $.amount.value', 'minor', 'strict $.amount.currency',
     NULL),
    ('CHARGEBACK', 2, NULL, 'ignore', NULL, '', '', NULL, NULL, NULL, NULL,
     NULL, 'a chargeback notification without success: nothing moved'),
    ('SECOND_CHARGEBACK', 1, '$.success == "true"', 'chargeback',
     'strict $.pspReference', 'chargeback:', ':second',
     'strict $.originalReference', NULL, 'strict $.amount.value', 'minor',
     'strict $.amount.currency', NULL),
    ('SECOND_CHARGEBACK', 2, NULL, 'ignore', NULL, '', '', NULL, NULL, NULL,
     NULL, NULL, 'a second chargeback without success: nothing moved'),
    ('CHARGEBACK_REVERSED', 1, '$.success == "true"', 'chargeback_reversal',
     'strict $.pspReference', 'chargeback:', ':reversed',
     'strict $.originalReference', NULL, 'strict $.amount.value', 'minor',
     'strict $.amount.currency', NULL),
    ('CHARGEBACK_REVERSED', 2, NULL, 'ignore', NULL, '', '', NULL, NULL,
     NULL, NULL, NULL, 'a reversal without success: nothing moved'),
    ('NOTIFICATION_OF_CHARGEBACK', 1, NULL, 'ignore', NULL, '', '', NULL,
     NULL, NULL, NULL, NULL,
     'a dispute opened: money moves at CHARGEBACK, if it comes'),
    ('REQUEST_FOR_INFORMATION', 1, NULL, 'ignore', NULL, '', '', NULL, NULL,
     NULL, NULL, NULL, 'the issuer asks about a payment: nothing moved'),
    ('REPORT_AVAILABLE', 1, NULL, 'ignore', NULL, '', '', NULL, NULL, NULL,
     NULL, NULL, 'a report is ready: reconciliation fetches it')
     ) r (event_type, step, only_if, action, payment, key_prefix, key_suffix,
          original, deposit, amount, amount_form, currency, note_text);

-- automatic capture: the authorisation is the payment
INSERT INTO mt5credit.payload_rule (payload, event_type, step, only_if,
    action, payment, deposit, amount, amount_form, currency, note_text)
VALUES
    ('adyen', 'AUTHORISATION', 1, '$.success == "true"', 'paid',
     'strict $.pspReference', 'strict $.merchantReference',
     'strict $.amount.value', 'minor', 'strict $.amount.currency', NULL),
    ('adyen', 'AUTHORISATION', 2, NULL, 'failed', 'strict $.pspReference',
     'strict $.merchantReference', NULL, NULL, 'strict $.amount.currency',
     'authorisation refused'),
    ('adyen', 'CAPTURE', 1, '$.success == "true"', 'ignore', NULL, NULL,
     NULL, NULL, NULL, 'captured: credited when it was authorised'),
    ('adyen', 'CAPTURE', 2, NULL, 'review', 'strict $.originalReference',
     'strict $.merchantReference', 'strict $.amount.value', 'minor',
     'strict $.amount.currency',
     'the capture of a payment credited at its authorisation was refused'),
    -- credited at the authorisation, and the money will not come
    ('adyen', 'CAPTURE_FAILED', 1, NULL, 'review',
     'strict $.originalReference', 'strict $.merchantReference',
     'strict $.amount.value', 'minor', 'strict $.amount.currency',
     'the capture of a payment credited at its authorisation failed'),
    ('adyen', 'CANCELLATION', 1, '$.success == "true"', 'review',
     'strict $.originalReference', 'strict $.merchantReference',
     'strict $.amount.value', 'minor', 'strict $.amount.currency',
     'a payment credited at its authorisation was cancelled'),
    ('adyen', 'CANCELLATION', 2, NULL, 'ignore', NULL, NULL, NULL, NULL,
     NULL, 'a cancellation Adyen refused: nothing moved');

-- manual capture: the capture is the payment
INSERT INTO mt5credit.payload_rule (payload, event_type, step, only_if,
    action, payment, deposit, amount, amount_form, currency, note_text)
VALUES
    ('adyen_manual', 'AUTHORISATION', 1, '$.success == "true"', 'pending',
     'strict $.pspReference', 'strict $.merchantReference', NULL, NULL,
     'strict $.amount.currency', 'authorised, not captured'),
    ('adyen_manual', 'AUTHORISATION', 2, NULL, 'failed',
     'strict $.pspReference', 'strict $.merchantReference', NULL, NULL,
     'strict $.amount.currency', 'authorisation refused'),
    ('adyen_manual', 'CAPTURE', 1, '$.success == "true"', 'paid',
     'strict $.originalReference', 'strict $.merchantReference',
     'strict $.amount.value', 'minor', 'strict $.amount.currency', NULL),
    ('adyen_manual', 'CAPTURE', 2, NULL, 'failed',
     'strict $.originalReference', 'strict $.merchantReference', NULL, NULL,
     'strict $.amount.currency', 'capture refused'),
    ('adyen_manual', 'CAPTURE_FAILED', 1, NULL, 'failed',
     'strict $.originalReference', 'strict $.merchantReference', NULL, NULL,
     'strict $.amount.currency', 'capture failed'),
    ('adyen_manual', 'CANCELLATION', 1, '$.success == "true"', 'expired',
     'strict $.originalReference', 'strict $.merchantReference', NULL, NULL,
     'strict $.amount.currency', 'cancelled before capture'),
    ('adyen_manual', 'CANCELLATION', 2, NULL, 'ignore', NULL, NULL, NULL,
     NULL, NULL, 'a cancellation Adyen refused: nothing moved');
