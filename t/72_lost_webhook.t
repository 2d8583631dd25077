#!/usr/bin/perl
#
# A lost webhook, end to end: the Stripe double (t/stripesim/) takes two
# payments and delivers one signed webhook to nginx, losing the other;
# `mt5credit poll-provider` finds the lost one by asking; the worker makes
# both deals on the MT5 simulator.  Impossible:
#   - a paid deposit whose webhook was lost never reaching MT5
#   - the delivered one being credited twice (by the webhook and by the
#     query)
#   - a second query round crediting anything
#   - poll-provider's own metrics missing what it asked (metrics_dir,
#     query_metrics_listen)

use strict;
use warnings;

use JSON::PP;
use Test::More;

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my $KEY = 'rk_test_lost_' . join('', map { ('a' .. 'z')[rand 26] } 1 .. 16);

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
$st->account(login => 70301);

my $state = $sb->dir . '/stripe-sessions.json';
my $port = Mt5Credit::Sandbox::free_port();
my %sessions;
sub sessions {
    open my $f, '>', "$state.tmp" or die $!;
    print $f JSON::PP->new->canonical->encode(\%sessions);
    close $f;
    rename "$state.tmp", $state or die $!;
}
sessions();
$sb->spawn('stripesim', 'perl',
           "$Mt5Credit::Sandbox::ROOT/t/stripesim/stripesim.pl", $port,
           $state, $KEY);
Mt5Credit::Sandbox::wait_port($port, 'stripesim');

my $keyfile = $sb->write_file('stripe-api.key', "$KEY\n");
my $conf = $st->worker_config('w1',
    provider_api_url => "http://127.0.0.1:$port",
    provider_api_key_file => $keyfile, query_min_age => 0);

sub checkout {
    my ($n, $amount) = @_;
    my $ref = $sb->create_deposit(client => 'alice', login => 70301,
                                  amount => $amount, key => "lost-test-$n");
    $sb->psql("SELECT mt5credit.deposit_set_session('alice', '$ref', "
              . "'cs_lost_$n')", user => 'portal');
    $sessions{"cs_lost_$n"} = { status => 'open', payment_status => 'unpaid',
                                amount_total => $amount, currency => 'usd',
                                client_reference_id => $ref,
                                payment_intent => "pi_lost_$n" };
    sessions();
    return $ref;
}

sub pay {
    my ($n, $lose) = @_;
    my $r = $sb->http('POST', '/control/pay', port => $port,
        body => JSON::PP->new->encode({
            session => "cs_lost_$n", secret => $Mt5Credit::Stack::SECRET,
            url => 'http://127.0.0.1:' . $sb->nginx_port . '/webhooks/stripe',
            lose => $lose ? 1 : 0 }),
        headers => [ [ 'Content-Type', 'application/json' ] ]);
    return JSON::PP->new->decode($r->{body})->{delivered};
}

sub credits {
    return $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit c JOIN "
                     . "mt5credit.deposit d ON d.id = c.deposit_id "
                     . "WHERE d.reference = '$_[0]'");
}

my $kept = checkout(1, 12000);
my $lost = checkout(2, 34000);
is(pay(1, 0), 200, 'the first payment: its webhook reaches nginx, 200');
is(pay(2, 1), 0, 'the second payment: its webhook is lost');
is(credits($kept) . ' ' . credits($lost), '1 0',
   'one credit from the webhook, none for the lost one');

mkdir $sb->dir . '/textfile';
my $mconf = $st->worker_config('w1',
    provider_api_url => "http://127.0.0.1:$port",
    provider_api_key_file => $keyfile, query_min_age => 0,
    metrics_dir => $sb->dir . '/textfile');
my ($rc, $out) = Mt5Credit::Worker::run($sb, 'poll-provider', '-c', $mconf,
                                        '--once');
is($rc, 0, 'poll-provider runs a round');
my $prom = do { local $/;
                open my $f, '<', $sb->dir . '/textfile/mt5credit-poll-provider-w1.prom'
                    or die "no textfile: $!";
                <$f> };
like($prom, qr/^mt5credit_provider_requests_total\{worker="[^"]+",program="poll-provider",provider="stripe",code="2xx"\} [1-9]\d*$/m,
     'its own metrics (metrics_dir): the provider\'s answers by status class');
like($prom, qr/^mt5credit_provider_request_duration_seconds_count\{worker="[^"]+",program="poll-provider",provider="stripe"\} [1-9]/m,
     '... their time');
like($prom, qr/^mt5credit_program_last_round_timestamp_seconds\{worker="[^"]+",program="poll-provider"\} \d{10}$/m,
     '... and its last round');
is(credits($kept) . ' ' . credits($lost), '1 1',
   'the lost payment is found by asking; the other is not credited again');

# the same metrics over HTTP, while it runs (query_metrics_listen)
{
    my $mport = $sb->free_port;
    my $hconf = $st->worker_config('pp1',
        provider_api_url => "http://127.0.0.1:$port",
        provider_api_key_file => $keyfile, query_min_age => 0,
        query_metrics_listen => "127.0.0.1:$mport");
    Mt5Credit::Worker::start_cmd($sb, 'pp1', 'poll-provider', $hconf);
    my $r;
    ok(Mt5Credit::Worker::wait_for(sub {
           $r = eval { $sb->http('GET', '/metrics', port => $mport) } // {};
           ($r->{status} // 0) == 200 }, 30),
       'poll-provider serves GET /metrics on query_metrics_listen');
    like($r->{body}, qr/^mt5credit_program_last_round_timestamp_seconds\{worker="[^"]+",program="poll-provider"\} \d{10}$/m,
         '... its last round');
    like($r->{body}, qr/^# TYPE mt5credit_provider_request_duration_seconds histogram$/m,
         '... and its provider requests\' histogram');
    is(Mt5Credit::Worker::stop($sb, 'pp1'), 0, '... and stops on TERM');
}

Mt5Credit::Worker::start($sb, 'w1', $conf);
my $ids = $sb->psql("SELECT c.id FROM mt5credit.mt5_credit c JOIN "
                    . "mt5credit.deposit d ON d.id = c.deposit_id "
                    . "WHERE d.reference IN ('$kept', '$lost') ORDER BY c.id");
for my $row (@$ids) {
    ok($st->wait_status($row->[0], 'done'), "credit $row->[0] is made");
    is(scalar @{ $st->deals_of($row->[0]) }, 1,
       "... one deal for credit $row->[0]");
}
Mt5Credit::Worker::stop($sb, 'w1');

Mt5Credit::Worker::run($sb, 'poll-provider', '-c', $conf, '--once');
is($sb->sql1('SELECT count(*) FROM mt5credit.mt5_credit'), 2,
   'another round credits nothing');

done_testing;
