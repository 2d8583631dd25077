--
-- 036: a deployment tag in every MT5 comment and payout idempotency key.
--
-- References are small integers: staging's credit 5 and production's
-- credit 5 are both "dep:5", and both databases' withdrawal 5 pays out as
-- "wd_000005" under the key "mt5credit-payout-5".  A staging database
-- pointed at live MT5 or the live Stripe account (a copied config, a
-- restored snapshot) then makes deals and payouts that production's
-- resolver "finds" as its own: production's dep:5 is recorded done with
-- staging's deal and never credited.  Now each database carries a short
-- tag, set once by its owner and never changed, and every credit and
-- payout made after it carries it:
--
--   the MT5 comment     <tag>:dep:5     (at most 8 + 1 + 22 = 31 chars)
--   the payout key      mt5credit-<tag>-payout-5, and the payout's
--                       metadata names the tag (mt5credit_deployment)
--
-- The credit's own reference (dep:5) does not change: it is what people,
-- cases and the portal name.  Credits and payouts made before the tag
-- keep their untagged comment and key for ever (their deployment_tag is
-- NULL), so a lookup of an old credit still finds its deal.  Each program
-- is configured with the tag it expects (deployment_tag) and refuses a
-- database that says otherwise (mc_deployment.c).
--
-- Reconciliation compares deals' comments with references: a deal's
-- comment with this database's tag is stored untagged in
-- recon_deal.comment (the comment MT5 holds is kept in mt5_comment), so
-- recon_match() is unchanged; a deal of another deployment keeps its tag
-- and matches no credit (deal_without_reference).
--
-- work_item_of() (033's) and payout_item_of() (018's) are re-declared
-- here; this file holds their current definitions.
--

CREATE TABLE mt5credit.deployment (
    -- one row: the table holds this database's tag or nothing
    one      boolean     PRIMARY KEY DEFAULT true CHECK (one),
    tag      text        NOT NULL CHECK (tag ~ '^[a-z0-9]{1,8}$'),
    set_by   text        NOT NULL DEFAULT session_user,
    set_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);

COMMENT ON TABLE mt5credit.deployment IS
    'This database''s deployment tag, in every MT5 comment and payout key '
    'made after it was set; set once by the owner, never changed (036).';

-- a changed tag would orphan every tagged deal: set once, for ever
CREATE TRIGGER deployment_fixed
    BEFORE UPDATE OR DELETE OR TRUNCATE ON mt5credit.deployment
    FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();


CREATE FUNCTION mt5credit.deployment_tag()
RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT tag FROM deployment
$$;


-- which deployment made a credit or a payout: taken from the database at
-- insert, whatever the inserter says, and never changed
ALTER TABLE mt5credit.mt5_credit ADD COLUMN deployment_tag text;
ALTER TABLE mt5credit.payout ADD COLUMN deployment_tag text;

COMMENT ON COLUMN mt5credit.mt5_credit.deployment_tag IS
    'the deployment tag when it was made (036); its MT5 comment is '
    '<tag>:<reference>, or the reference alone when NULL';
COMMENT ON COLUMN mt5credit.payout.deployment_tag IS
    'the deployment tag when it was made (036): in its idempotency key '
    'and metadata';

CREATE FUNCTION mt5credit.deployment_stamp()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        NEW.deployment_tag := (SELECT tag FROM deployment);
    ELSIF NEW.deployment_tag IS DISTINCT FROM OLD.deployment_tag THEN
        RAISE EXCEPTION '%: which deployment made it never changes',
                        TG_TABLE_NAME USING ERRCODE = 'MC011';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER mt5_credit_deployment
    BEFORE INSERT OR UPDATE OF deployment_tag ON mt5credit.mt5_credit
    FOR EACH ROW EXECUTE FUNCTION mt5credit.deployment_stamp();

CREATE TRIGGER payout_deployment
    BEFORE INSERT OR UPDATE OF deployment_tag ON mt5credit.payout
    FOR EACH ROW EXECUTE FUNCTION mt5credit.deployment_stamp();


-- the comment a credit's deal carries in MT5
CREATE FUNCTION mt5credit.mt5_comment(p_tag text, p_reference text)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT coalesce(p_tag || ':', '') || p_reference
$$;


-- 033's work item: the reference is the comment the deal carries
CREATE OR REPLACE FUNCTION mt5credit.work_item_of(p_id bigint)
RETURNS mt5credit.work_item
LANGUAGE sql STABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT c.id, c.attempts, c.kind, c.direction,
           mt5_comment(c.deployment_tag, c.reference), c.mt5_server,
           c.mt5_login, c.amount_minor, c.currency, cur.minor_digits,
           o.client_id,
           EXISTS (SELECT 1 FROM client_account a
                   WHERE a.mt5_server = c.mt5_server
                     AND a.mt5_login = c.mt5_login
                     AND a.client_id = o.client_id
                     AND a.currency = c.currency
                     AND a.status = 'active'),
           c.created_at, c.claimed_at, c.lease_expires_at,
           (extract(epoch FROM c.lease_expires_at - clock_timestamp())
            * 1000)::bigint,
           CASE WHEN c.status = 'unknown'
                THEN (settle_request(c.id)).deal_ticket END
    FROM mt5_credit c
    CROSS JOIN LATERAL (
        SELECT d.client_id FROM deposit d WHERE d.id = c.deposit_id
        UNION ALL
        SELECT w.client_id FROM withdrawal w WHERE w.id = c.withdrawal_id
    ) o
    JOIN currency cur ON cur.code = c.currency
    WHERE c.id = p_id
$$;


-- 018's payout item: the tagged key, the debit's comment, and the tag
ALTER TYPE mt5credit.payout_item ADD ATTRIBUTE deployment_tag text;

CREATE OR REPLACE FUNCTION mt5credit.payout_item_of(p_id bigint)
RETURNS mt5credit.payout_item
LANGUAGE sql STABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT p.id, p.attempts, p.status, p.reference,
           CASE WHEN p.deployment_tag IS NULL THEN p.idempotency_key
                ELSE 'mt5credit-' || p.deployment_tag || '-payout-'
                     || p.withdrawal_id END,
           p.provider, p.amount_minor, p.currency, p.destination,
           p.provider_payout_id, mt5_comment(c.deployment_tag, c.reference),
           extract(epoch FROM p.first_sent_at)::bigint, p.deployment_tag
    FROM payout p
    JOIN mt5_credit c ON c.id = p.debit_credit_id
    WHERE p.id = p_id
$$;


-- reconciliation: this deployment's deals compared by reference
ALTER TABLE mt5credit.recon_deal ADD COLUMN mt5_comment text;

COMMENT ON COLUMN mt5credit.recon_deal.mt5_comment IS
    'the comment as MT5 holds it; comment is the same without this '
    'database''s deployment tag (036)';

CREATE FUNCTION mt5credit.recon_deal_untag()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_tag  text := (SELECT tag FROM deployment);
BEGIN
    NEW.mt5_comment := NEW.comment;
    IF v_tag IS NOT NULL AND left(NEW.comment, length(v_tag) + 1)
                             = v_tag || ':'
    THEN
        NEW.comment := substr(NEW.comment, length(v_tag) + 2);
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER recon_deal_untag
    BEFORE INSERT ON mt5credit.recon_deal
    FOR EACH ROW EXECUTE FUNCTION mt5credit.recon_deal_untag();


REVOKE ALL ON FUNCTION mt5credit.deployment_tag() FROM PUBLIC;

GRANT EXECUTE ON FUNCTION mt5credit.deployment_tag()
    TO mt5credit_worker, mt5credit_recon, mt5credit_query,
       mt5credit_operator, mt5credit_reader;
