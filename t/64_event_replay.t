#!/usr/bin/perl
#
# Stored events, listed, shown and replayed (`mt5credit events`,
# sql/039_event_replay.sql), through nginx and the worker on the MT5
# simulator.  Impossible:
#   - a replay making a second credit: an event replayed 10 times, by two
#     people, leaves its one credit and one MT5 deal
#   - an event not found by its deposit, or found outside --until
#   - an event stored before its deposit existed staying uncredited once
#     the deposit is there and the event is replayed, or being credited to
#     any login but the deposit's
#   - a replay without its reason, or by the edge, the worker or a reader
#   - a replay changing the stored event (its bytes, its disposition)
#   - a replay left unrecorded: each has who, when, why, the outcome
#   - `events show --raw` giving other bytes than were received

use strict;
use warnings;

use Digest::SHA qw(sha256_hex);
use Test::More;

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Provider qw(stripe_event);
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
$st->account(login => 70401);
$st->account(login => 70402);
$sb->psql('CREATE ROLE auditor LOGIN IN ROLE mt5credit_reader');

my $db = 'host=127.0.0.1 port=' . $sb->pg_port . ' dbname=mt5credit';

sub events {
    my ($who, @args) = @_;
    return Mt5Credit::Worker::run($sb, 'events', '--database',
                                  "$db user=$who", @args);
}

sub event_of {
    my ($evt) = @_;
    return $sb->sql1("SELECT id FROM mt5credit.webhook_event "
                     . "WHERE provider_event_id = '$evt'");
}

sub credits_of {
    my ($pi) = @_;
    return $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit "
                     . "WHERE provider_payment_id = '$pi'");
}

# --- an event that came before its deposit ----------------------------

# the portal's deposit commits after the provider's webhook (a race): the
# event names a reference that does not exist yet
my $next = $sb->sql1("SELECT 'dep_' || lpad((coalesce(max(id), 0) + 1)"
                     . "::text, 6, '0') FROM mt5credit.deposit");
my $early = stripe_event(id => 'evt_replay_early', deposit => $next,
                         amount => 4200, pi => 'pi_replay_early');
my $res = $st->webhook($early);
is($res->{status}, 200, 'the early event is stored and answered 200');
my $ev = event_of('evt_replay_early');
ok($ev, 'it is stored');
is(credits_of('pi_replay_early'), 0, 'no credit: its deposit is unknown');
is($sb->sql1("SELECT disposition FROM mt5credit.webhook_event "
             . "WHERE id = $ev"), 'case_opened', 'a case was opened');

my ($rc, $out) = events('ops_alice', 'replay', $ev);
is($rc, 2, 'a replay without --reason is a usage error');
like($out, qr/--reason is required/, 'and says so');

my $ref = $sb->create_deposit(client => 'alice', login => 70402,
                              amount => 4200);
is($ref, $next, "the deposit is $next, the reference the event named");

for my $who (qw(edge worker auditor)) {
    my $err = $sb->psql("SELECT * FROM mt5credit.event_replay($ev, 'x')",
                        user => $who, may_fail => 1);
    like($err, qr/permission denied/, "$who may not replay");
}
is(credits_of('pi_replay_early'), 0, 'and nothing was credited');

($rc, $out) = events('ops_alice', 'replay', $ev, '--reason',
                     'deposit committed after the webhook');
is($rc, 0, 'a person replays it') or diag $out;
like($out, qr/credit_created \(credit (\d+)\)/, 'the replay made a credit');
my ($cid) = $out =~ /credit (\d+)\)/;
my $c = $sb->psql("SELECT mt5_login, amount_minor, status FROM "
                  . "mt5credit.mt5_credit WHERE id = $cid")->[0];
is_deeply($c, [ 70402, 4200, 'pending' ],
          "credited to the deposit's login, its amount, pending");

# --- replays never make a second credit -------------------------------

for my $i (1 .. 10) {
    ($rc, $out) = events($i % 2 ? 'ops_bob' : 'ops_alice', 'replay', $ev,
                         '--reason', "replay $i");
    is($rc, 0, "replay $i runs") or diag $out;
    like($out, qr/already_credited \(credit $cid\)/,
         "replay $i: already credited, credit $cid");
}
is(credits_of('pi_replay_early'), 1, 'one credit after 11 replays');

# the event delivered again by the provider is a duplicate, as before
$res = $st->webhook($early);
like($res->{body}, qr/duplicate/, 'a redelivery is a duplicate');
is(credits_of('pi_replay_early'), 1, 'still one credit');

$st->start_worker('w1');
ok($st->wait_status($cid, 'done'), 'the worker makes the credit');
$st->stop_worker('w1');
my $reference = $st->credit($cid)->{reference};
is(scalar @{ $st->deals_with($reference) }, 1, 'one MT5 deal');
is($st->sim->ledger->{deals}[-1]{Login}, 70402, "on the deposit's login");

# a replay after the deal: still the one credit, the deal untouched
($rc, $out) = events('ops_bob', 'replay', $ev, '--reason', 'after the deal');
like($out, qr/already_credited/, 'a replay after the deal changes nothing');
is(scalar @{ $st->deals_with($reference) }, 1, 'still one MT5 deal');

# --- the record -------------------------------------------------------

my $rows = $sb->psql("SELECT replayed_by, outcome, reason FROM "
                     . "mt5credit.webhook_event_replay WHERE event_id = $ev "
                     . "ORDER BY id");
is(scalar @$rows, 12, 'every replay is recorded');
is_deeply($rows->[0], [ 'ops_alice', 'credit_created',
                        'deposit committed after the webhook' ],
          'the first: who, what came of it, why');
is_deeply([ map { $_->[0] } @$rows[1, 2] ], [ 'ops_bob', 'ops_alice' ],
          'each by the person who made it');
is($sb->sql1("SELECT count(*) FROM mt5credit.webhook_event_replay "
             . "WHERE event_id = $ev AND replayed_at IS NOT NULL"), 12,
   'each with its time');
like($sb->psql('UPDATE mt5credit.webhook_event_replay SET reason = $$x$$',
               may_fail => 1), qr/append-only|refuse|not allowed|cannot/i,
     'a replay record cannot be changed');

is($sb->sql1("SELECT disposition || '/' || coalesce(credit_id::text, '-') "
             . "FROM mt5credit.webhook_event WHERE id = $ev"),
   'case_opened/-', "the stored event still says what ingest() did then");
is($sb->sql1("SELECT encode(body_sha256, 'hex') FROM "
             . "mt5credit.webhook_event WHERE id = $ev"), sha256_hex($early),
   'its bytes are those received');

# --- list and show ----------------------------------------------------

($rc, $out) = events('auditor', 'show', $ev, '--raw');
is($rc, 0, 'a reader may look') or diag $out;
is($out, "$early\n", 'show --raw gives the bytes as received');

($rc, $out) = events('ops_alice', 'show', $ev);
like($out, qr/"replays": \[/, 'show lists the replays');
like($out, qr/"signature_scheme": "stripe"/, 'and the scheme');

($rc, $out) = events('ops_alice', 'list', '--payment', 'pi_replay_early');
like($out, qr/^$ev\s+stripe\s+evt_replay_early\s+.*\s12\s/m,
     'list finds the event by its payment, with its 12 replays');
like($out, qr/\(1 event\)/, 'and only it');

($rc, $out) = events('ops_alice', 'list', '--deposit', $next);
like($out, qr/^$ev\s+stripe\s+evt_replay_early\s/m,
     'list --deposit finds it by the deposit it names');
my $received = $sb->sql1("SELECT received_at FROM mt5credit.webhook_event "
                         . "WHERE id = $ev");
($rc, $out) = events('ops_alice', 'list', '--deposit', $next, '--until',
                     $received);
like($out, qr/\(0 events\)/, '--until: received before it, so not it');
($rc, $out) = events('ops_alice', 'list', '--deposit', 'dep_nothing');
like($out, qr/\(0 events\)/, 'a deposit no event names: none');

($rc, $out) = events('ops_alice', 'replay', 999999, '--reason', 'x');
is($rc, 1, 'replaying an event that does not exist fails');
like($out, qr/no stored event 999999/, 'and says which');

($rc, $out) = events('ops_alice', 'frobnicate');
is($rc, 2, 'an unknown action is a usage error');

done_testing;
