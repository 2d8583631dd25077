#!/usr/bin/perl
#
# The webhooks a lost timeline acknowledged, asked for again by the
# project itself (sql/069).  The provider got 200 for each and will not
# send them again.  Reproduced before, on 29185f3: five paid events
# acknowledged after the database's last surviving change (three of them
# credited, two not yet), the database brought back, the rewind noticed:
# no backfill asked for, and a backfill run read only the provider's
# undelivered events (these were delivered): the five payments stayed out
# of the database, two clients never credited.  This makes impossible:
#   - a lost acknowledged webhook left lost: the rewind asks the backfill
#     for every event of its window, delivered or not, and its next run
#     ingests each
#   - a recovered payment credited twice: its credit is looked up in MT5
#     first and the lost timeline's deal recorded (three), or made once
#     when there is none (two)
#   - a provider without a list of its events forgotten: a critical case
#     names it and the window, for a person to have them sent again
#   - a second run, or the edge's own retry, making anything twice

use strict;
use warnings;

use JSON::PP;
use Test::More;

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Provider qw(stripe_event);
use Mt5Credit::Worker;

my $KEY = 'rk_test_recover_' . join('', map { ('a' .. 'z')[rand 26] } 1 .. 16);
my $json = JSON::PP->new->canonical;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
my $sim = $st->sim;
my $data = $sb->dir . '/pg';
$st->account(login => 70801);

my $state = $sb->dir . '/stripe-state.json';
$sb->write_file('stripe-state.json', '{}');
my $port = Mt5Credit::Sandbox::free_port();
$sb->spawn('stripesim', 'perl',
           "$Mt5Credit::Sandbox::ROOT/t/stripesim/stripesim.pl", $port,
           $state, $KEY);
Mt5Credit::Sandbox::wait_port($port, 'stripesim');

my %fast = (call_timeout => 1, lease => 8, settle_margin => 1,
            provider_api_url => "http://127.0.0.1:$port",
            provider_api_key_file => $sb->write_file('stripe-api.key',
                                                     "$KEY\n"));
my $conf = $st->worker_config('w1', %fast);

sub cp_tree {
    my ($from, $to) = @_;
    system('rm', '-rf', $to) == 0 or die;
    system('cp', '-a', $from, $to) == 0 or die "cp $from $to";
}

sub backfill {
    return Mt5Credit::Worker::run($sb, 'backfill', 'stripe', '-c', $conf,
                                  '--since', '1h');
}

sub credit_of {
    my ($pi) = @_;
    return $sb->sql1("SELECT id FROM mt5credit.mt5_credit "
                     . "WHERE provider_payment_id = '$pi'");
}

sub deals_on {
    return scalar grep { $_->{Login} eq '70801' } @{ $sim->ledger->{deals} };
}

# five deposits the portal made, with their Checkout Sessions, and
# another provider's (no list of events)
my @pay;
for my $i (1 .. 5) {
    my $dep = $sb->create_deposit(client => 'alice', login => 70801,
                                  amount => 2000 + $i, key => "recover-$i");
    my $body = stripe_event(deposit => $dep, amount => 2000 + $i,
                            pi => "pi_recover_$i");
    my $cs = $json->decode($body)->{data}{object};
    $sb->psql("SELECT mt5credit.deposit_set_session('alice', "
              . "'$cs->{client_reference_id}', '$cs->{id}')", user => 'portal');
    push @pay, { pi => "pi_recover_$i", body => $body };
}
$sb->create_deposit(client => 'alice', login => 70801, amount => 999,
                    provider => 'acmepay', key => 'recover-acme');

$sb->stop_postgres;
cp_tree($data, "$data-snapshot");
$sb->start_postgres;

# delivered and acknowledged: three credited, two not yet
my $deliver = sub {
    my ($p) = @_;
    $sb->http('POST', '/control/event', port => $port,
              body => $json->encode({ body => $p->{body}, delivered => 1 }),
              headers => [ [ 'Content-Type', 'application/json' ] ]);
    my $res = $st->webhook($p->{body});
    is($res->{status}, 200, "$p->{pi}: acknowledged");
};
$deliver->($_) for @pay[0 .. 2];
$st->start_worker('w1', %fast);
ok(Mt5Credit::Worker::wait_for(sub {
       !grep { my $c = credit_of($_->{pi});
               !$c || $st->status_of($c) ne 'done' } @pay[0 .. 2] }, 60),
   'three credited');
my %ticket = map { $_->{pi} => $st->credit(credit_of($_->{pi}))->{ticket} }
             @pay[0 .. 2];
$st->stop_worker('w1');
$deliver->($_) for @pay[3 .. 4];
is(deals_on(), 3, 'three deals in MT5');

# the database goes back; the worker notices
$sb->stop_postgres;
cp_tree("$data-snapshot", $data);
$sb->start_postgres;
is($sb->sql1("SELECT count(*) FROM mt5credit.webhook_event"), 0,
   'the five acknowledged events are not in the database any more');

$st->start_worker('w1', %fast);
ok(Mt5Credit::Worker::wait_for(sub {
       $sb->sql1("SELECT count(*) FROM mt5credit.case "
                 . "WHERE kind = 'database_rewound'") == 1 }, 30),
   'the rewind is noticed');
is($sb->sql1("SELECT provider || ' ' || every_event || ' ' || requested_by "
             . "FROM mt5credit.backfill_request"),
   'stripe true database_rewound:w1',
   'a backfill of every event of the window is asked for Stripe');
is($sb->sql1("SELECT count(*) || ' ' || min(severity) || ' ' "
             . "|| min(details->>'provider') FROM mt5credit.case "
             . "WHERE kind = 'events_lost_in_rewind'"),
   '1 critical acmepay',
   'a provider without a list of events: a critical case names it');

# the backfill's next run (its timer)
my ($rc, $out) = backfill();
is($rc, 0, 'the backfill runs') or diag $out;
like($out, qr/backfill stripe: 5 listed; 5 ingested/,
     '... and ingests the five delivered events, as the edge would');
is($sb->sql1("SELECT outcome IS NOT NULL FROM mt5credit.backfill_request"),
   't', '... finishing the request');

ok(Mt5Credit::Worker::wait_for(sub {
       !grep { my $c = credit_of($_->{pi});
               !$c || $st->status_of($c) ne 'done' } @pay }, 60),
   'all five payments end done');
is(deals_on(), 5, 'five deals for five payments, never a second');
is(join(' ', map { $st->credit(credit_of($_->{pi}))->{ticket} } @pay[0 .. 2]),
   join(' ', map { $ticket{ $_->{pi} } } @pay[0 .. 2]),
   "the three credited in the lost timeline: recorded with its deals");

# again: nothing more
($rc, $out) = backfill();
is($rc, 0, 'a second run');
is($sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit"), 5,
   '... makes no credit');
$deliver->($pay[4]);
sleep 2;
is(deals_on(), 5, "the provider's late retry makes no deal either");
$st->stop_worker('w1');

is_deeply([ $sb->log_problems ], [], 'nginx logged no alert or crash');

done_testing;
