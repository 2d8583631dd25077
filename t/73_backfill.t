#!/usr/bin/perl
#
# mt5credit backfill stripe (sql/047_backfill.sql): the webhooks Stripe
# could not deliver, read from its own list of undelivered events.  Of
# 20 payments, 19 refunds and 19 disputes, one webhook of each type (5%)
# never reaches the edge.  Impossible:
#   - a lost payment, refund or dispute left uncredited once backfill ran
#   - a second credit: for an event already stored (delivered, though
#     Stripe lists it undelivered), a second backfill run, or the lost
#     webhook arriving late after all
#   - the provider's bytes replaced by ours: the stored event is the
#     event as GET /v1/events/<id> gave it
#   - a list that is not complete (has_more with nothing more) taken as
#     complete; an answer that is another event than the one asked for
#     stored
#   - anyone but the query role feeding events
#   - a person's backfill request from further back than the timer's
#     window not honoured by the next run, honoured twice, or taken by a
#     role other than the query's; a request past Stripe's 30 days

use strict;
use warnings;

use Digest::SHA qw(sha256_hex);
use JSON::PP;
use Test::More;

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Provider qw(stripe_event);
use Mt5Credit::Worker;

my $KEY = 'rk_test_backfill_' . join('', map { ('a' .. 'z')[rand 26] } 1 .. 16);
my $json = JSON::PP->new->canonical;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
$st->account(login => 70701);

my $state = $sb->dir . '/stripe-state.json';
$sb->write_file('stripe-state.json', '{}');
my $port = Mt5Credit::Sandbox::free_port();
$sb->spawn('stripesim', 'perl',
           "$Mt5Credit::Sandbox::ROOT/t/stripesim/stripesim.pl", $port,
           $state, $KEY);
Mt5Credit::Sandbox::wait_port($port, 'stripesim');

my $conf = $st->worker_config('w1',
    provider_api_url => "http://127.0.0.1:$port",
    provider_api_key_file => $sb->write_file('stripe-api.key', "$KEY\n"));

sub faults { $sb->write_file('stripe-state.json.faults', $json->encode({ @_ })) }

# Stripe's side of one event: kept in its list, delivered to the edge or
# not ("lost"); $stored_only: delivered to us, yet listed undelivered
my %lost;
sub event {
    my ($body, %o) = @_;
    my $e = $json->decode($body);
    my $id = $e->{id};
    # the portal stored the Checkout Session on its deposit, as it does
    # (docs/portal-integration.md): what vouches for a backfilled payment
    # (sql/064)
    my $cs = $e->{data}{object};
    $sb->psql("SELECT mt5credit.deposit_set_session('alice', "
              . "'$cs->{client_reference_id}', '$cs->{id}')", user => 'portal')
        if $cs->{object} eq 'checkout.session';
    $sb->http('POST', '/control/event', port => $port,
              body => $json->encode({ body => $body,
                                      delivered => $o{lose} || $o{unsure}
                                                   ? 0 : 1 }),
              headers => [ [ 'Content-Type', 'application/json' ] ]);
    if ($o{lose}) {
        $lost{$id} = $body;
        return;
    }
    my $res = $st->webhook($body);
    die "webhook: $res->{status}" unless $res->{status} == 200;
    return $id;
}

sub backfill {
    return Mt5Credit::Worker::run($sb, 'backfill', 'stripe', '-c', $conf,
                                  '--since', '1h', @_);
}

sub count_kind {
    $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit WHERE kind = '$_[0]'")
}

Mt5Credit::Worker::start($sb, 'w1', $conf);

# --- 20 payments, 19 refunds, 19 disputes; one of each lost --------------------

my %pi;
for my $i (1 .. 20) {
    my $dep = $sb->create_deposit(client => 'alice', login => 70701,
                                  amount => 10000, key => "backfill-$i");
    $pi{$i} = "pi_backfill_$i";
    event(stripe_event(deposit => $dep, amount => 10000, pi => $pi{$i}),
          lose => $i == 7, unsure => $i == 3);
}
is(count_kind('deposit'), 19, 'one payment webhook of 20 lost: 19 credits');
ok(Mt5Credit::Worker::wait_for(sub {
       $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit "
                 . "WHERE status = 'done'") == 19 }, 60),
   '... made');

# (none of the lost payment's: a refund of a payment with no credit is a
# case of its own, runbook refund_without_credit)
for my $i (grep { $_ != 7 } 1 .. 20) {
    event(stripe_event(type => 'charge.refunded', pi => $pi{$i},
                       amount => 1000, charge => "ch_backfill_$i"),
          lose => $i == 13);
    event(stripe_event(type => 'charge.dispute.funds_withdrawn',
                       pi => $pi{$i}, amount => 2000,
                       dispute => "du_backfill_$i"),
          lose => $i == 17);
}
is(count_kind('refund') . ' ' . count_kind('chargeback'), '18 18',
   'a refund and a dispute webhook of 19 lost');

# --- backfill ------------------------------------------------------------------

my ($rc, $out) = backfill();
is($rc, 0, 'backfill stripe runs, the list complete') or diag $out;
like($out, qr/backfill stripe: 4 listed; 3 ingested, 1 already stored, 0 refused/,
     '... four undelivered events listed: the three lost, and one stored '
     . 'already');

is(count_kind('deposit') . ' ' . count_kind('refund') . ' '
   . count_kind('chargeback'), '20 19 19',
   'every payment, refund and dispute has its one credit');
is($sb->sql1("SELECT count(*) FROM mt5credit.webhook_event WHERE "
             . "provider_event_id LIKE 'backfill:evt_%' AND "
             . "signature_scheme = 'api'"), 3,
   'the three lost events stored as backfilled API answers');
for my $id (sort keys %lost) {
    is($sb->sql1("SELECT encode(sha256(raw_body), 'hex') FROM "
                 . "mt5credit.webhook_event WHERE provider_event_id = "
                 . "'backfill:$id'"), sha256_hex($lost{$id}),
       "... $id: the provider's bytes, as it gave them");
}
ok(Mt5Credit::Worker::wait_for(sub {
       $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit "
                 . "WHERE status <> 'done'") == 0 }, 60),
   'all 58 credits made');
my %deals;
$deals{$_->{Comment}}++ for @{ $st->sim->ledger->{deals} };
is(scalar(keys %deals), 58, '58 deals');
is_deeply([ grep { $deals{$_} != 1 } sort keys %deals ], [], '... one each');

# --- again, and the lost webhook arriving late ------------------------------------

($rc, $out) = backfill();
is($rc, 0, 'a second run');
like($out, qr/4 listed; 0 ingested, 4 already stored/, '... stores nothing');
my ($late) = grep { $lost{$_} =~ /checkout\.session\.completed/ } keys %lost;
my $res = $st->webhook($lost{$late});
is($res->{status}, 200, 'the lost payment webhook comes late: 200');
my $backfilled = $sb->sql1("SELECT credit_id FROM mt5credit.webhook_event "
                           . "WHERE provider_event_id = 'backfill:$late'");
like($res->{body}, qr/"credit":$backfilled\b/,
     "... stored as one more event, naming the backfilled credit "
     . "($backfilled)") or diag $res->{body};
is(count_kind('deposit'), 20, '... no second credit');
is($sb->sql1("SELECT count(*) FROM mt5credit.case WHERE kind = "
             . "'event_body_conflict'"), 0, 'no body conflict anywhere');

# --- what is not trusted ------------------------------------------------------------

faults(events_list => 'more_lie');
($rc, $out) = backfill();
is($rc, 1, 'a list that says there is more, and then has nothing: exit 1');
like($out, qr/list incomplete/, '... said incomplete');
faults();

my $dep21 = $sb->create_deposit(client => 'alice', login => 70701,
                                amount => 10000, key => 'backfill-21');
event(stripe_event(deposit => $dep21, amount => 10000, pi => 'pi_backfill_21'),
      lose => 1);
faults(event_get => 'other_id');
($rc, $out) = backfill();
is($rc, 1, 'an answer that is another event: exit 1');
like($out, qr/5 listed; 0 ingested, 0 already stored, 5 refused/,
     '... every answer refused, before anything is looked up');
is(count_kind('deposit'), 20, '... and nothing credited from it');
faults();
($rc, $out) = backfill();
is($rc, 0, 'with the right answer, the next run') or diag $out;
is(count_kind('deposit'), 21, '... credits it');

# --- a person asks for more than the timer's window (sql/059) ------------------

my $dep22 = $sb->create_deposit(client => 'alice', login => 70701,
                                amount => 10000, key => 'backfill-22');
(my $early = stripe_event(deposit => $dep22, amount => 10000,
                          pi => 'pi_backfill_22'))
    =~ s/"created": \d+/'"created": ' . (time - 5 * 3600)/e;
event($early, lose => 1);
($rc, $out) = backfill();
is(count_kind('deposit'), 21,
   'a payment lost five hours ago: the timer\'s run (--since 1h) does not reach it');
like($sb->psql("SELECT mt5credit.backfill_request_add('stripe', now() - "
               . "interval '40 days', 'too far')", user => 'ops_alice',
               may_fail => 1, raw => 1),
     qr/a backfill reads from a time in the last 30 days/,
     'a request past Stripe\'s 30 days is refused');
my $req = $sb->sql1("SELECT mt5credit.backfill_request_add('stripe', now() - "
                    . "interval '6 hours', 'Stripe could not reach us this "
                    . "morning')", user => 'ops_alice');
ok($req, "an operator asks for a backfill from six hours back (request $req)");
like($sb->psql("SELECT * FROM mt5credit.backfill_requests_take('stripe')",
               user => 'worker', may_fail => 1, raw => 1),
     qr/permission denied/, '... which the worker may not take');
($rc, $out) = backfill();
is($rc, 0, 'the next run') or diag $out;
is(count_kind('deposit'), 22, '... reads from the request\'s time, and credits it');
is($sb->sql1("SELECT requested_by || ' ' || taken_by || ' ' || "
             . "(finished_at IS NOT NULL)::text FROM mt5credit.backfill_request "
             . "WHERE id = $req"), 'ops_alice query true',
   '... the request finished, by the query role, asked by ops_alice');
like($sb->sql1("SELECT outcome FROM mt5credit.backfill_request WHERE id = $req"),
     qr/\d+ listed; 1 ingested/, '... with what it found');
($rc, $out) = backfill();
is(count_kind('deposit'), 22, 'a further run: nothing again');
is($sb->sql1("SELECT count(*) FROM mt5credit.backfill_request WHERE "
             . "finished_at IS NULL"), 0, '... and no request open');
like($sb->psql("UPDATE mt5credit.backfill_request SET since = now() "
               . "WHERE id = $req", may_fail => 1),
     qr/never change/, 'what was asked cannot be rewritten');

like($sb->psql("SELECT * FROM mt5credit.backfill_event('stripe', 'evt_x', "
               . "'{\"id\": \"evt_x\", \"object\": \"event\", \"data\": "
               . "{\"object\": {}}}')", user => 'worker', may_fail => 1,
               raw => 1),
     qr/permission denied for function backfill_event/,
     'the worker may not feed events');
like($sb->psql("SELECT * FROM mt5credit.backfill_event('stripe', 'evt_x', "
               . "'{}')", user => 'edge', may_fail => 1, raw => 1),
     qr/permission denied/, '... nor the edge');
like($sb->psql("SELECT * FROM mt5credit.backfill_event('stripe', 'evt_y', "
               . "'{\"id\": \"evt_z\", \"object\": \"event\"}')",
               user => 'query', may_fail => 1, raw => 1),
     qr/the answer for evt_y is not that event/,
     'the query role: only the event asked for');

Mt5Credit::Worker::stop($sb, 'w1');
done_testing;
