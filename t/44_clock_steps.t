#!/usr/bin/perl
#
# Clocks move while a credit's outcome is unknown: MT5 server time is the
# broker's local time and jumps at summer time (most brokers run UTC+2,
# UTC+3 in summer), a server clock is set back, a worker's host drifts.
# Each scenario: the balance call executes and the connection drops (so
# the credit is unknown), then a clock moves before the resolver looks.
# Impossible:
#   - the deal falling outside the resolver's window, the complete answer
#     read as "no deal", and the credit made a second time: after a step
#     of +1 h, -1 h or -10 min of the server's offset
#   - a worker whose host clock is 20 minutes slow doing the same: the
#     window is built from the database's clock, which created_at is
#     taken by, never from the host's

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(sleep);
use Time::Local ();

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
my $sim = $st->sim;

# the resolver looks after lease + settle_margin: 11 s to move a clock
my %fast = (call_timeout => 1, lease => 8, settle_margin => 3);
my $WINTER = 120;                                   # UTC+2, in minutes

$st->account(login => 70001);

sub one_deal_found {
    my ($id, $what) = @_;
    my $c = $st->credit($id);
    my $deals = $st->deals_with($c->{reference});
    is(scalar @$deals, 1, "$what: exactly one deal carries $c->{reference}");
    is($c->{ticket}, $deals->[0]{Deal} // 'none',
       "$what: the credit is done with that deal's ticket");
    is($c->{attempts}, 1, "$what: found by its reference, never re-sent");
    unlike(join(' ', @{ $st->history_of($id) }), qr/unknown>pending/,
           "$what: never sent back to pending");
}

# unknown: executed, the connection dropped; then $move->(); then settled
sub scenario {
    my ($what, $amount, $move) = @_;
    $sim->set_offset($WINTER);
    $sim->fault(kind => 'drop_after', endpoint => '/api/trade/balance',
                count => 1);
    my $id = $st->pay(login => 70001, amount => $amount);
    ok($st->wait_status($id, 'unknown', 15), "$what: the outcome is unknown");
    $move->();
    ok($st->wait_status($id, 'done', 45), "$what: the resolver settles it")
        or diag(join ' ', @{ $st->history_of($id) });
    one_deal_found($id, $what);
    $sim->clear_faults;
}

# --- the server's offset steps ----------------------------------------------

$st->start_worker('w1', %fast);

for my $step ([ 60, 'summer time begins (+1 h)' ],
              [ -60, 'summer time ends (-1 h)' ],
              [ -10, 'the server clock set back 10 min' ])
{
    my ($minutes, $what) = @$step;
    scenario($what, 7000 + $minutes, sub { $sim->set_offset($WINTER + $minutes) });
}

$st->stop_worker('w1');
$sim->set_offset($WINTER);

# --- a worker host 20 minutes slow --------------------------------------------

# libfaketime preloaded into the worker itself (not the faketime wrapper:
# the process the sandbox stops must be the worker, or it outlives the test)
my $FAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1';

SKIP: {
    skip 'libfaketime is not installed', 7 unless -e $FAKETIME;

    # its clock is off, so is its view of the certificate's validity: this
    # worker does not verify TLS (logged), the point here is the window
    my $conf = Mt5Credit::Worker::config($sb, 'slow',
        servers => [ [ 'live1', $sim, tls_verify => 'off' ] ], %fast);
    {
        local $ENV{LD_PRELOAD} = $FAKETIME;
        local $ENV{FAKETIME} = '-20m';
        local $ENV{FAKETIME_DONT_FAKE_MONOTONIC} = 1;
        $sb->spawn('worker-slow', $Mt5Credit::Worker::BIN, 'work',
                   '-c', $conf);
    }

    scenario('a worker host 20 min slow', 7100, sub { });

    # its log lines carry its own clock: 20 minutes behind
    my ($y, $mo, $d, $h, $mi, $se) = Mt5Credit::Worker::log_of($sb, 'slow')
        =~ /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)/m;
    my $behind = defined $se
        ? time - Time::Local::timegm($se, $mi, $h, $d, $mo - 1, $y) : 0;
    ok($behind > 1100 && $behind < 1500,
       "... its clock was really slow ($behind s behind at its first line)");
}

done_testing();
