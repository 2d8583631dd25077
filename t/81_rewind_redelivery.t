#!/usr/bin/perl
#
# A payment of a lost timeline meets the database again.  MT5 keeps the
# deals a database restore (or an asynchronous failover) forgets.
# Reproduced before, on 29185f3 (references were the row's number):
#   - five payments stored and credited, the database restored to before
#     they were stored, a worker back for 8 s (it noticed the rewind and
#     moved the numbering on), the same five events delivered again: ten
#     balance deals for five payments;
#   - three payments credited, the database restored, three other
#     payments stored before any worker came back: they took the lost
#     ones' numbers, their lookups "found" the lost payments' deals, and
#     the three clients were never credited.
# A credit's reference is now its payment's (sql/066): this makes
# impossible:
#   - a payment credited twice because the database forgot its credit:
#     delivered again within a week of a rewind, its credit is looked up
#     before any call, from the start of the lost timeline, and its deal
#     found
#   - another payment recorded with a lost payment's deal: no two
#     payments share a reference, on any timeline

use strict;
use warnings;

use Test::More;

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Worker;
use Mt5Credit::Provider qw(stripe_event);

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
my $sim = $st->sim;
my $data = $sb->dir . '/pg';
my %fast = (call_timeout => 1, lease => 8, settle_margin => 1);

sub cp_tree {
    my ($from, $to) = @_;
    system('rm', '-rf', $to) == 0 or die;
    system('cp', '-a', $from, $to) == 0 or die "cp $from $to";
}

sub snapshot {
    my ($name) = @_;
    $sb->stop_postgres;
    cp_tree($data, "$data-$name");
    $sb->start_postgres;
}

sub restore {
    my ($name) = @_;
    $sb->stop_postgres;
    cp_tree("$data-$name", $data);
    $sb->start_postgres;
}

# deposits made by our server, and their providers' signed events
sub payments {
    my ($login, $tag, $n) = @_;
    return [ map {
        my $amount = 1000 + $_;
        my $dep = $sb->create_deposit(client => 'alice', login => $login,
                                      amount => $amount);
        { dep => $dep, pi => "pi_${tag}_$_",
          body => stripe_event(deposit => $dep, amount => $amount,
                               pi => "pi_${tag}_$_") }
    } 1 .. $n ];
}

sub deliver {
    my ($pays) = @_;
    my @ids;
    for my $p (@$pays) {
        my $res = $st->webhook($p->{body});
        is($res->{status}, 200, "$p->{pi}: delivered, 200");
        push @ids, $res->{body} =~ /"credit":(\d+)/ ? $1 : undef;
    }
    return @ids;
}

sub credit_of {
    my ($pi) = @_;
    return $sb->sql1("SELECT id FROM mt5credit.mt5_credit "
                     . "WHERE provider_payment_id = '$pi'");
}

sub deals_on {
    my ($login) = @_;
    return [ grep { $_->{Login} eq $login }
             @{ $sim->ledger->{deals} } ];
}

sub all_done {
    my ($pays, $timeout) = @_;
    return Mt5Credit::Worker::wait_for(sub {
        !grep { my $id = credit_of($_->{pi});
                !$id || $st->status_of($id) ne 'done' } @$pays }, $timeout);
}

# ---- item 5: a payment of the lost timeline delivered again ----------------

$st->account(login => 70001);
my $five = payments(70001, 'again', 5);
snapshot('before-five');

$st->start_worker('w1', %fast);
deliver($five);
ok(all_done($five, 60), 'five payments credited');
my %ticket = map { $_->{pi} => $st->credit(credit_of($_->{pi}))->{ticket} }
             @$five;
is(scalar @{ deals_on(70001) }, 5, '... five deals in MT5');
$st->stop_worker('w1');

restore('before-five');
is($sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit"), 0,
   'the database was brought back to before they were stored');

# a worker notices the rewind (its kept claim) and moves the numbers on
$st->start_worker('w1', %fast);
ok(Mt5Credit::Worker::wait_for(sub {
       $sb->sql1("SELECT count(*) FROM mt5credit.case "
                 . "WHERE kind = 'database_rewound'") == 1 }, 30),
   'the worker notices the rewind: a database_rewound case');
sleep 8;

# the provider's retry, a backfill or a replay: the same events again
deliver($five);
ok(all_done($five, 60), 'delivered again, each payment ends done');
is(scalar @{ deals_on(70001) }, 5,
   'five deals for five payments, never a second');
is(join(' ', map { $st->credit(credit_of($_->{pi}))->{ticket} } @$five),
   join(' ', map { $ticket{ $_->{pi} } } @$five),
   "each recorded with the lost timeline's deal, found by its reference");
like(join(' ', @{ $st->history_of(credit_of($five->[0]{pi})) }),
     qr/^->pending pending>unknown unknown>done$/,
     '... looked up before any call, never claimed');
$st->stop_worker('w1');

# ---- item 4: a lost payment's number given to another ---------------------

$st->account(login => 70002);
my $lost = payments(70002, 'lost', 3);
my $other = payments(70002, 'other', 3);
snapshot('before-three');

$st->start_worker('w1', %fast);
deliver($lost);
ok(all_done($lost, 60), 'three payments credited');
my %lost_deal = map { $st->credit(credit_of($_->{pi}))->{ticket} => 1 } @$lost;
$st->stop_worker('w1');

restore('before-three');

# three other payments come in before any worker is back
my @ids = deliver($other);
$st->start_worker('w1', %fast);
ok(all_done($other, 60), 'the three other payments end done');
is(scalar(grep { $lost_deal{ $st->credit(credit_of($_->{pi}))->{ticket} } }
          @$other), 0,
   "none of them recorded with a lost payment's deal");
is(scalar @{ deals_on(70002) }, 6,
   'six deals: the lost three and three of their own');
my %refs = map { $st->ref_of(credit_of($_->{pi})) => 1 } @$other;
is(scalar(grep { $refs{ $_->{Comment} } } @{ deals_on(70002) }), 3,
   '... each under its own payment\'s reference');
$st->stop_worker('w1');

is_deeply([ $sb->log_problems ], [], 'nginx logged no alert or crash');

done_testing;
