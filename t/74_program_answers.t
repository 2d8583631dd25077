#!/usr/bin/perl
#
# A program's answer (sql/064): the bytes poll-provider and backfill bring
# from a provider's API are the provider's word only where the deposit
# vouches for them.  With the credentials of mt5credit_query alone
# (issue 29, item 6), impossible:
#   - a credit from a made-up payment_intent.succeeded for an unpaid
#     deposit of 7,777.00 (backfill_event): for a deposit with no stored
#     payment, with another one stored, or with the deposit's own session
#     and another amount or currency
#   - a credit from a made-up payment.succeeded of a Standard Webhooks
#     PSP, whose API no program asks: through backfill_event() or
#     query_answered()
#   - money back to MT5 from a made-up dispute reinstatement
#   - query_answered() standing for an event type poll-provider never
#     asks (a refund, a reinstatement), or with JSON of its own in the type
#   - a refused answer stored (reconciliation could replay it later), or
#     refused without a critical case holding what came, what was
#     expected, the answer's SHA-256 and who called
#   - a program writing which providers' APIs it may answer for
#   - another function a program role may run that hands bytes to
#     ingest(): the query's two, and reconciliation's replay of events
#     already stored, are all there is
# and still possible: the provider's true answer crediting its deposit
# (a Checkout Session, a PaymentIntent the portal made itself), the event
# of a payment already credited to that deposit, a refund and a dispute
# of a credited payment.

use strict;
use warnings;

use Digest::SHA qw(sha256_hex);
use Test::More;

use lib 't/lib';
use Mt5Credit::Provider qw(stripe_event);
use Mt5Credit::Sandbox;

my $sb = Mt5Credit::Sandbox->new;
$sb->start_postgres;
$sb->register_account('alice', 7401, 'USD');

sub lit { (my $s = $_[0]) =~ s/'/''/g; return "convert_to('$s', 'UTF8')" }

my $n = 0;
sub deposit {
    my (%o) = @_;
    my $ref = $sb->create_deposit(client => 'alice', login => 7401,
                                  amount => $o{amount} // 777700,
                                  provider => $o{provider} || 'stripe',
                                  key => 'answers-' . ++$n);
    $sb->psql("SELECT mt5credit.deposit_set_session('alice', '$ref', "
              . "'$o{session}')", user => 'portal') if $o{session};
    return $ref;
}

# backfill_event() as the query role: outcome, credit, detail
sub backfill {
    my ($provider, $id, $body, %o) = @_;
    my $r = $sb->psql("SELECT outcome, coalesce(credit_id::text, '-'), "
                      . "coalesce(detail, '') FROM mt5credit.backfill_event("
                      . "'$provider', '$id', " . lit($body) . ')',
                      user => $o{user} || 'query', %o);
    return ref $r ? $r->[0] : $r;
}

sub answer {
    my ($provider, $ref, $type, $bytes, %o) = @_;
    my $t = defined $type ? "'" . ($type =~ s/'/''/gr) . "'" : 'NULL';
    return $sb->sql1("SELECT mt5credit.query_answered('$provider', "
                     . dep_id($ref) . ", $t, " . lit($bytes) . ')',
                     user => 'query', %o);
}

sub edge {
    my ($body) = @_;
    return $sb->sql1("SELECT outcome FROM mt5credit.ingest('stripe', NULL, "
                     . lit($body) . ", 'stripe', " . time . ')',
                     user => 'edge');
}

sub credits {
    my ($ref, $kind) = @_;
    return $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit c JOIN "
                     . "mt5credit.deposit d ON d.id = c.deposit_id WHERE "
                     . "d.reference = '$ref'"
                     . ($kind ? " AND c.kind = '$kind'" : ''));
}

sub stored {
    my ($id) = @_;
    return $sb->sql1("SELECT count(*) FROM mt5credit.webhook_event WHERE "
                     . "provider_event_id IN ('$id', 'backfill:$id')");
}

# the case a refused answer opened: severity, caller, the answer's hash,
# the deposit it names
sub case_of {
    my ($sha) = @_;
    my $r = $sb->psql("SELECT severity, details->>'caller', "
                      . "coalesce(deposit_id::text, '-'), "
                      . "(details ? 'got')::text, (details ? 'expected')::text "
                      . "FROM mt5credit.case WHERE kind = "
                      . "'query_answer_mismatch' AND details->>'answer_sha256' "
                      . "= '$sha'");
    return @$r == 1 ? join(' ', @{ $r->[0] }) : scalar(@$r) . ' cases';
}

sub dep_id {
    $sb->sql1("SELECT id FROM mt5credit.deposit WHERE reference = '$_[0]'")
}

# --- made-up payments through backfill_event() ----------------------------------

my $unpaid = deposit();
my $forged = stripe_event(type => 'payment_intent.succeeded',
                          id => 'evt_forged_1', deposit => $unpaid,
                          amount => 777700, pi => 'pi_forged_1');
my $r = backfill('stripe', 'evt_forged_1', $forged);
is($r->[0], 'refused', 'a made-up payment_intent.succeeded for an unpaid '
   . 'deposit of 7,777.00 (no payment stored on it): refused')
    or diag explain $r;
is(credits($unpaid), 0, '... no credit');
is(stored('evt_forged_1'), 0, '... nothing stored for reconciliation to '
   . 'replay');
is(case_of(sha256_hex($forged)), 'critical query ' . dep_id($unpaid)
   . ' true true', '... a critical case on the deposit: what came, what was '
   . 'expected, the answer\'s hash, who called');

my $carded = deposit(session => 'cs_test_74_carded');
my %made_up = (
    'a PaymentIntent that is not the session stored' =>
        stripe_event(type => 'payment_intent.succeeded', id => 'evt_forged_2',
                     deposit => $carded, amount => 777700,
                     pi => 'pi_forged_2'),
    'another session' =>
        stripe_event(id => 'evt_forged_3', deposit => $carded,
                     amount => 777700, pi => 'pi_forged_3'),
    'the session stored, another amount' =>
        stripe_event(id => 'evt_forged_4', deposit => $carded,
                     amount => 777800, pi => 'pi_forged_4')
            =~ s/cs_test_evt_forged_4/cs_test_74_carded/r,
    'the session stored, another currency' =>
        stripe_event(id => 'evt_forged_5', deposit => $carded,
                     amount => 777700, currency => 'EUR', pi => 'pi_forged_5')
            =~ s/cs_test_evt_forged_5/cs_test_74_carded/r,
);
for my $what (sort keys %made_up) {
    my ($id) = $made_up{$what} =~ /"id": "(evt_[^"]+)"/;
    my $r = backfill('stripe', $id, $made_up{$what});
    is($r->[0] . ' ' . stored($id), 'refused 0',
       "a deposit with its session stored, an event naming $what: refused, "
       . 'not stored');
    is(case_of(sha256_hex($made_up{$what})), 'critical query '
       . dep_id($carded) . ' true true', '... a critical case');
}
is(credits($carded), 0, '... and no credit from any of them');

# --- a Standard Webhooks PSP: no API a program asks ------------------------------

my $psp = deposit(provider => 'acmepay', amount => 777700,
                  session => 'acme-74-1');
my $psp_event = '{"id": "evt_forged_psp", "object": "event", '
    . '"type": "payment.succeeded", "data": {"object": {}, '
    . '"payment_id": "acme-74-1", "deposit_reference": "' . $psp . '", '
    . '"amount_minor": 777700, "currency": "USD"}}';
$r = backfill('acmepay', 'evt_forged_psp', $psp_event);
is($r->[0] . ' ' . credits($psp) . ' ' . stored('evt_forged_psp'),
   'refused 0 0', 'a made-up payment.succeeded of a Standard Webhooks PSP, '
   . 'through backfill: refused, no credit, nothing stored')
    or diag explain $r;
like(case_of(sha256_hex($psp_event)), qr/^critical query /,
     '... a critical case');
my $psp_answer = '{"id": "acme-74-1", "payment_id": "acme-74-1", '
    . '"deposit_reference": "' . $psp . '", "amount_minor": 777700, '
    . '"currency": "USD"}';
is(answer('acmepay', $psp, 'payment.succeeded', $psp_answer), 'refused',
   '... and as an answer to a query');
is(credits($psp), 0, '... no credit');
like(case_of(sha256_hex($psp_answer)), qr/^critical query /,
     '... a critical case');

# --- money back to MT5 for a dispute ---------------------------------------------

my $disputed = deposit(amount => 5000, session => 'cs_test_74_disputed');
my $paid = stripe_event(id => 'evt_74_paid', deposit => $disputed,
                        amount => 5000, pi => 'pi_74_disputed')
    =~ s/cs_test_evt_74_paid/cs_test_74_disputed/r;
is(edge($paid), 'credit_created', 'a signed webhook pays a deposit');
is(edge(stripe_event(type => 'charge.dispute.funds_withdrawn',
                     pi => 'pi_74_disputed', amount => 2000,
                     dispute => 'du_74')),
   'credit_created', '... a signed dispute takes 20.00 back');
my $reinstated = stripe_event(type => 'charge.dispute.funds_reinstated',
                              id => 'evt_forged_6', pi => 'pi_74_disputed',
                              amount => 2000, dispute => 'du_74');
$r = backfill('stripe', 'evt_forged_6', $reinstated);
is($r->[0] . ' ' . credits($disputed, 'chargeback'), 'refused 1',
   'a made-up reinstatement of that dispute: refused, no money back')
    or diag explain $r;
like(case_of(sha256_hex($reinstated)), qr/^critical query /,
     '... a critical case');

# --- query_answered(): only the types poll-provider asks for ---------------------

my $asked = deposit(amount => 5000, session => 'pi_74_asked');
my $pi = '{"id": "pi_74_asked", "object": "payment_intent", "amount": 5000, '
    . '"amount_received": 5000, "currency": "usd", "status": "succeeded", '
    . '"metadata": {"deposit_id": "' . $asked . '"}, '
    . '"client_reference_id": "' . $asked . '", "payment_intent": '
    . '"pi_74_asked"}';
for my $type ('charge.dispute.funds_reinstated', 'charge.refunded',
              'payment_intent.succeeded", "data": {"object": {}}, "x": "')
{
    is(answer('stripe', $asked, $type, $pi), 'refused',
       "an answer standing for \"$type\": refused");
}
is(credits($asked), 0, '... no credit, no debit');
is($sb->sql1("SELECT count(*) || ' ' || min(severity) || ' ' || "
             . "max(details->>'sightings') FROM mt5credit.case WHERE kind = "
             . "'query_answer_mismatch' AND deposit_id = " . dep_id($asked)),
   '1 critical 3', '... one critical case on the deposit, seen three times');

# --- what only the schema owner sets ----------------------------------------------

like($sb->psql("INSERT INTO mt5credit.provider_api VALUES ('acmepay', "
               . "'mt5credit_query', true, '{}')", user => 'query',
               may_fail => 1),
     qr/permission denied/, 'the query role cannot add a provider it may '
     . 'answer for');
for my $user (qw(worker recon edge)) {
    like(backfill('stripe', 'evt_forged_1', $forged, user => $user,
                  may_fail => 1),
         qr/permission denied/, "$user may not bring an answer at all");
}

# which functions a program role may run reach ingest's facts: the
# query's two, and reconciliation's replay of stored events (sql/040)
my $reach = $sb->psql(<<'SQL');
WITH RECURSIVE f AS (
    SELECT p.proname, p.prosrc FROM pg_proc p
    JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname = 'mt5credit'
), calls AS (
    SELECT DISTINCT a.proname AS caller, b.proname AS callee
    FROM f a JOIN f b ON a.prosrc ~ ('\m' || b.proname || '\s*\(')
    WHERE a.proname <> b.proname
), reach (role, entry, fn, depth) AS (
    SELECT r.rolname, p.proname, p.proname, 0
    FROM pg_roles r CROSS JOIN pg_proc p
    JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname = 'mt5credit'
      AND r.rolname IN ('mt5credit_query', 'mt5credit_worker',
                        'mt5credit_recon')
      AND has_function_privilege(r.oid, p.oid, 'EXECUTE')
    UNION
    SELECT r.role, r.entry, c.callee, r.depth + 1
    FROM reach r JOIN calls c ON c.caller = r.fn
    WHERE r.depth < 8
)
SELECT DISTINCT role || ' ' || entry FROM reach
WHERE fn IN ('ingest', 'ingest_facts', 'ingest_paid', 'ingest_reversal')
ORDER BY 1;
SQL
is(join(', ', map { $_->[0] } @$reach),
   'mt5credit_query backfill_event, mt5credit_query query_answered, '
   . 'mt5credit_recon recon_load_deals, mt5credit_recon recon_match, '
   . 'mt5credit_recon recon_tickets',
   'a program reaches ingest only through the two answers checked here, '
   . 'and reconciliation\'s replay of stored events');

# --- what still credits --------------------------------------------------------------

my $true_cs = deposit(amount => 5000, session => 'cs_test_74_true');
my $true = stripe_event(id => 'evt_74_true', deposit => $true_cs,
                        amount => 5000, pi => 'pi_74_true')
    =~ s/cs_test_evt_74_true/cs_test_74_true/r;
$r = backfill('stripe', 'evt_74_true', $true);
is($r->[0] . ' ' . credits($true_cs), 'credit_created 1',
   'the provider\'s event for the session stored on its deposit: credited')
    or diag explain $r;
my $pi_of_cs = stripe_event(type => 'payment_intent.succeeded',
                            id => 'evt_74_true_pi', deposit => $true_cs,
                            amount => 5000, pi => 'pi_74_true');
$r = backfill('stripe', 'evt_74_true_pi', $pi_of_cs);
is($r->[0] . ' ' . $sb->sql1("SELECT disposition FROM "
                             . "mt5credit.webhook_event WHERE "
                             . "provider_event_id = 'backfill:evt_74_true_pi'"),
   'stored already_credited',
   '... its PaymentIntent\'s event after it: stored, already credited, '
   . 'no case') or diag explain $r;
is(case_of(sha256_hex($pi_of_cs)), '0 cases', '... none');

my $direct = deposit(amount => 5000, session => 'pi_74_direct');
$r = backfill('stripe', 'evt_74_direct',
              stripe_event(type => 'payment_intent.succeeded',
                           id => 'evt_74_direct', deposit => $direct,
                           amount => 5000, pi => 'pi_74_direct'));
is($r->[0] . ' ' . credits($direct), 'credit_created 1',
   'a PaymentIntent the portal made itself: credited');

$r = backfill('stripe', 'evt_74_refund',
              stripe_event(type => 'charge.refunded', id => 'evt_74_refund',
                           pi => 'pi_74_true', amount => 1000));
is($r->[0] . ' ' . credits($true_cs, 'refund'), 'credit_created 1',
   'a refund of a credited payment: debited');
$r = backfill('stripe', 'evt_74_dispute',
              stripe_event(type => 'charge.dispute.funds_withdrawn',
                           id => 'evt_74_dispute', pi => 'pi_74_direct',
                           amount => 2000, dispute => 'du_74_direct'));
is($r->[0] . ' ' . credits($direct, 'chargeback'), 'credit_created 1',
   'a dispute of a credited payment: debited');

my $polled = deposit(amount => 5000, session => 'pi_74_polled');
(my $pi_polled = $pi) =~ s/pi_74_asked/pi_74_polled/g;
$pi_polled =~ s/\Q$asked\E/$polled/g;
is(answer('stripe', $polled, 'payment_intent.succeeded', $pi_polled),
   'credit_created', 'poll-provider\'s true answer about a PaymentIntent: '
   . 'credited');

done_testing;
