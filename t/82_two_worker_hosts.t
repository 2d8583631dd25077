#!/usr/bin/perl
#
# Workers on two hosts, and a database that goes back in time.  Each host
# keeps its own claims (state_dir): a per-host memory.  Reproduced before,
# on 29185f3: host A's worker credits three deposits, the database goes
# back to before those claims, host B's worker (its own state_dir, none
# of A's claims in it) comes first, finds nothing missing, claims the
# three again and sends trade/balance for each: six deals for three
# payments, no database_rewound case, no alert; host A, back later,
# notices nothing either (B's re-claim put the attempt where A kept it).
# MT5 is the witness both hosts share (sql/068, mc_witness.c).  This makes
# impossible:
#   - a second deal for a credit whose claim the database lost, whichever
#     host comes first: before claiming, on every new connection, a worker
#     asks MT5 about the credits next in line, and a deal under the
#     comment of one still pending at its attempt is a rewind
#   - the rewind going unseen: a critical case and an alert, from the
#     host that saw it
#   - a lost credit ending anything but done with its original deal
#   - the same for a worker whose state_dir is new (a container)
#   - a false alarm: deals of this timeline (claimed, in flight, done)
#     are never evidence; a busy queue on an unchanged database opens no
#     case

use strict;
use warnings;

use Test::More;

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my ($st, $sb, $sim, $data, %host_a, %host_b);
my %fast = (call_timeout => 1, lease => 8, settle_margin => 1);

# a stack of its own: no earlier rewind on record (a payment's credit
# made within a week of one is looked up first anyway, sql/066)
sub fresh_stack {
    $st = Mt5Credit::Stack->new;
    $sb = $st->sb;
    $sim = $st->sim;
    $data = $sb->dir . '/pg';
    %host_a = (%fast, state_dir => $sb->dir . '/host-a');
    %host_b = (%fast, state_dir => $sb->dir . '/host-b');
}
fresh_stack();

sub cp_tree {
    my ($from, $to) = @_;
    system('rm', '-rf', $to) == 0 or die;
    system('cp', '-a', $from, $to) == 0 or die "cp $from $to";
}

sub rewind_cases {
    return $sb->sql1("SELECT count(*) FROM mt5credit.case "
                     . "WHERE kind = 'database_rewound'");
}

sub deals_on {
    my ($login) = @_;
    return scalar grep { $_->{Login} eq $login } @{ $sim->ledger->{deals} };
}

# ---- no false alarm on a database that did not move -------------------

$st->account(login => 70001);
$st->start_worker('a1', %host_a);
$st->start_worker('b1', %host_b);
my @busy = map { $st->pay(login => 70001, amount => 500 + $_) } 1 .. 20;
ok(Mt5Credit::Worker::wait_for(sub {
       !grep { $st->status_of($_) ne 'done' } @busy }, 60),
   'two hosts credit twenty deposits side by side');
is(deals_on(70001), 20, '... one deal each');
# both restart: each new connection asks MT5 again
$st->stop_worker('a1');
$st->stop_worker('b1');
$st->start_worker('a1', %host_a);
$st->start_worker('b1', %host_b);
my $more = $st->pay(login => 70001, amount => 777);
ok($st->wait_status($more, 'done', 30), 'after a restart of both, one more');
is(rewind_cases(), 0, 'an unchanged database is never taken for a rewound one');
$st->stop_worker('a1');
$st->stop_worker('b1');

# ---- host A credits, the database goes back, host B comes first -------

sub scenario {
    my ($what, $login, $b_state) = @_;
    my %b_opts = (%fast, state_dir => $b_state // $host_b{state_dir});

    $st->account(login => $login);
    my @ids = map { $st->pay(login => $login, amount => 1000 * $_ + 3) }
              1 .. 3;

    # the snapshot, taken while they are pending
    $sb->stop_postgres;
    cp_tree($data, "$data-snapshot");
    $sb->start_postgres;

    $st->start_worker('a1', %host_a);
    ok(Mt5Credit::Worker::wait_for(sub {
           !grep { $st->status_of($_) ne 'done' } @ids }, 60),
       "$what: host A credits all three");
    my %ticket = map { $_ => $st->credit($_)->{ticket} } @ids;
    is(deals_on($login), 3, "$what: three deals");
    $st->stop_worker('a1');

    # the database goes back to before A's claims
    $sb->stop_postgres;
    cp_tree("$data-snapshot", $data);
    $sb->start_postgres;
    is(scalar(grep { $st->status_of($_) eq 'pending' } @ids), 3,
       "$what: the database holds all three as pending again");
    my $cases = rewind_cases();

    # host B comes first: none of A's claims in its state_dir
    $st->start_worker('b1', %b_opts);
    ok(Mt5Credit::Worker::wait_for(sub {
           !grep { $st->status_of($_) ne 'done' } @ids }, 60),
       "$what: all three end done");
    is(deals_on($login), 3, "$what: three deals for three payments, never six");
    is(join(' ', map { $st->credit($_)->{ticket} } @ids),
       join(' ', map { $ticket{$_} } @ids),
       "$what: each with its original deal, found by its reference");
    is(rewind_cases(), $cases + 1, "$what: a database_rewound case");
    like($sb->sql1("SELECT details->>'witness' FROM mt5credit.case WHERE "
                   . "kind = 'database_rewound' ORDER BY id DESC LIMIT 1"),
         qr/^mt5$/, "$what: ... seen by MT5's witness");
    like($st->worker_log('b1'), qr/ALERT.*database_rewound.*MT5 holds deal/,
         "$what: a person is alerted");

    # host A comes back later: nothing more is made
    $st->start_worker('a1', %host_a);
    my $next = $st->pay(login => $login, amount => 4242);
    ok($st->wait_status($next, 'done', 30), "$what: a new deposit is credited");
    is(deals_on($login), 4, "$what: ... with one deal, and no other");
    $st->stop_worker('a1');
    $st->stop_worker('b1');
}

scenario('two hosts', 70002);
is_deeply([ $sb->log_problems ], [], 'nginx logged no alert or crash');

fresh_stack();
scenario('a worker with a fresh state_dir', 70003,
         $sb->dir . '/container-state');
is_deeply([ $sb->log_problems ], [], 'nginx logged no alert or crash');

done_testing;
