#!/usr/bin/perl
#
# The chaos soak's short form (t/soak/soak.pl; `make soak` runs the long
# one): 400 payments through the whole system while MT5 faults, worker
# SIGKILLs, PostgreSQL restarts, a database rollback, a failover to an
# asynchronous standby, worker database stalls, MT5 offset steps, Redis
# outages and nginx reloads happen, with the workers as two hosts,
# then the exactly-once checker; 8 withdrawals are debited and paid out
# meanwhile, through provider faults.  And the checker's own test: a double
# deal or a deal no credit explains, planted behind the system's back,
# must make it fail.  Impossible:
#   - a payment, refund or chargeback credited twice, lost, or on another
#     login, under any of those faults (with the seed printed, to replay)
#   - a withdrawal debited twice, paid out twice, or paid without its
#     debit, under those faults and the provider's
#   - a credit left not done without a case
#   - reconciliation of the soaked day finding anything but what was
#     injected
#   - the checker passing a run with a double or an unexplained deal
#   - the money journal reporting an edit nobody made, after restarts, a
#     rollback and a failover

use strict;
use warnings;

use Test::More;

my $seed = $ENV{MT5CREDIT_SOAK_SEED} || time % 100000;

sub soak {
    my (@args) = @_;
    my $out = `$^X t/soak/soak.pl @args 2>&1`;
    return ($? >> 8, $out);
}

my ($rc, $out) = soak('--n', 400, '--duration', 40, '--chaos-every', 2,
                      '--seed', $seed);
is($rc, 0, "400 payments under chaos: no violation (seed $seed)")
    or diag $out;
like($out, qr/chaos: worker SIGKILL\s+\d+/, '... workers were killed')
    or diag $out;
# the rollback always stops and restarts PostgreSQL; a plain restart is
# one random pick among many, and may not come up in 40 s
like($out, qr/chaos: database rollback \(snapshot restored\)\s+1$/m,
     '... the database was rolled back once (PostgreSQL stopped, restored)');
like($out, qr/chaos: database failover \(async standby promoted\)\s+1$/m,
     '... and failed over once to an asynchronous standby, promoted');
like($out, qr/withdrawals debited and paid out once\s+(\d+) of \1$/m,
     '... every withdrawal debited and paid out exactly once');
like($out, qr/journal entries verified \(exit\)\s+[1-9]\d* \(0\)$/m,
     '... and the money journal, sealed after it all, verifies: no false '
     . 'alarm after restarts, a rollback and a failover') or diag $out;
my ($expected) = $out =~ /expected balance deals\s+(\d+)/;
my ($matched) = $out =~ /matched exactly \(amount, login, once\)\s+(\d+)/;
ok($expected && $expected >= 400 && $matched == $expected,
   "every movement matched exactly once ($matched of $expected)");

for my $s ([ 'double', qr/2 deals \(double\)/ ],
           [ 'stray', qr/no credit explains/ ]) {
    my ($src, $sout) = soak('--n', 20, '--chaos', "''", '--duration', 2,
                            '--sabotage', $s->[0], '--seed', $seed);
    is($src, 1, "the checker fails a run with a planted $s->[0] deal");
    like($sout, $s->[1], '... naming it') or diag $sout;
}

done_testing;
