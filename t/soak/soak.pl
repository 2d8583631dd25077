#!/usr/bin/perl
#
# The chaos soak: the whole system under faults, then an exactly-once
# checker.  A provider (this script, signing as Stripe) takes N payments
# and sends their webhooks through nginx: duplicates, shuffled and late
# deliveries, late failures after success, some refunds and chargebacks,
# replays, and a few payments whose webhook is never sent (lost).  It
# retries anything not answered 200, as providers do.  Meanwhile:
#   - the MT5 simulator times out after and before executing, drops
#     connections, lies about logins in deal lists, and spikes latency;
#   - worker processes are SIGKILLed at random and restarted;
#   - PostgreSQL is restarted; Redis is stopped and started; nginx is
#     reloaded mid-traffic.
# Then the faults stop, the workers finish, and the checker compares the
# simulator's ledger with what the provider did:
#   - exactly one balance deal per credited payment, refund and chargeback,
#     of the exact amount, on the right login; no deal twice, none lost,
#     none that no credit explains;
#   - every credit not done has an open case saying why;
#   - reconciliation of the day against the provider's settlement finds
#     exactly what was injected (the lost webhooks), nothing else.
# It prints a summary and exits 1 on any violation.
#
#   perl t/soak/soak.pl [--n 10000] [--seed S] [--workers 2] [--senders 4]
#                       [--dup 0.3] [--refund 0.08] [--chargeback 0.04]
#                       [--lost 0.002] [--late-fail 0.05]
#                       [--chaos mt5,kill,pg,redis,nginx] [--chaos-every 3]
#                       [--duration 120]   (seconds the payments are spread
#                                           over, so the chaos meets them)
#                       [--sabotage double|stray|manual]  (the checker's own
#                                           test: plant a violation first)

use strict;
use warnings;

use Getopt::Long;
use List::Util qw(shuffle sum0);
use POSIX qw(strftime WNOHANG);
use Time::HiRes qw(sleep time);

use FindBin;
use lib "$FindBin::Bin/../lib";
use Mt5Credit::Provider qw(stripe_event stripe_headers);
use Mt5Credit::Settlement;
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my %o = (n => 10000, seed => time % 100000, workers => 2, senders => 4,
         dup => 0.3, refund => 0.08, chargeback => 0.04, lost => 0.002,
         'late-fail' => 0.05, chaos => 'mt5,kill,pg,redis,nginx',
         'chaos-every' => 3, logins => 40, duration => undef,
         sabotage => '');
GetOptions(\%o, 'n=i', 'seed=i', 'workers=i', 'senders=i', 'dup=f',
           'refund=f', 'chargeback=f', 'lost=f', 'late-fail=f', 'chaos=s',
           'chaos-every=f', 'logins=i', 'duration=f', 'sabotage=s')
    or die "usage: see the head of $0\n";
$o{duration} //= $o{n} / 80 < 30 ? 30 : $o{n} / 80;
my %chaos = map { $_ => 1 } grep { length } split /,/, $o{chaos};

srand $o{seed};
$| = 1;
my $t0 = time;
sub note { printf "[%6.1fs] %s\n", time - $t0, $_[0] }

note("seed $o{seed}, $o{n} payments, chaos: "
     . (join(',', sort keys %chaos) || 'none'));

# --- the system ---------------------------------------------------------------

my $st = Mt5Credit::Stack->new(nginx_workers => 2);
my $sb = $st->sb;
my $sim = $st->sim;
my $SECRET = $Mt5Credit::Stack::SECRET;
my @logins = map { 60001 + $_ } 0 .. $o{logins} - 1;
$st->account(login => $_) for @logins;

my %wopt = (call_timeout => 2, lease => 11, settle_margin => 1,
            resolve_retry => 1);
my $conf = Mt5Credit::Worker::config($sb, 'soak',
    servers => [ [ 'live1', $sim, recon_groups => 'real\\usd' ] ], %wopt,
    recon_database => '"host=127.0.0.1 port=' . $sb->pg_port
                      . ' dbname=mt5credit user=recon"',
    recon_out => $sb->dir);
my @workers = map { "soak$_" } 1 .. $o{workers};
Mt5Credit::Worker::start($sb, $_, $conf) for @workers;

# --- the provider's truth --------------------------------------------------------

note('creating deposits (the portal)');
my @pay;
{
    my @vals;
    for my $i (1 .. $o{n}) {
        my $login = $logins[rand @logins];
        my $amount = 100 + int(rand(500000));
        push @pay, { i => $i, login => $login, amount => $amount,
                     pi => "pi_soak_${i}_$o{seed}" };
        push @vals, "($i, $login, $amount)";
    }
    while (my @chunk = splice @vals, 0, 2000) {
        my $rows = $sb->psql("SELECT v.i, d.reference FROM (VALUES "
            . join(',', @chunk) . ") AS v (i, login, amount) CROSS JOIN "
            . "LATERAL mt5credit.create_deposit('alice', 'soak-' || v.i "
            . "|| '-$o{seed}', 'stripe', 'live1', v.login, v.amount, 'USD') "
            . "d", user => 'portal');
        $pay[ $_->[0] - 1 ]{ref} = $_->[1] for @$rows;
    }
}

my (@phase1, @phase2);    # deliveries: [ body, what ]
my ($n_lost, $n_refund, $n_cb, $n_dup) = (0, 0, 0, 0);
for my $p (@pay) {
    if (rand() < $o{lost}) {
        $p->{lost} = 1;
        $n_lost++;
        next;
    }
    my $ev = stripe_event(deposit => $p->{ref}, amount => $p->{amount},
                          pi => $p->{pi}, charge => "ch_soak_$p->{i}",
                          id => "evt_pay_$p->{i}_$o{seed}");
    my $copies = 1;
    if (rand() < $o{dup}) {
        $copies += 1 + int(rand(3));
        $n_dup++;
    }
    push @phase1, [ $ev, 'payment' ] for 1 .. $copies;
    if (rand() < $o{'late-fail'}) {
        push @phase1, [ stripe_event(
            type => 'checkout.session.async_payment_failed',
            payment_status => 'unpaid', deposit => $p->{ref},
            pi => $p->{pi}, id => "evt_fail_$p->{i}_$o{seed}"), 'late' ];
    }
    my $r = rand();
    if ($r < $o{refund}) {
        my $amt = rand() < 0.5 ? $p->{amount}
                                : 1 + int(rand($p->{amount} - 1 || 1));
        $p->{refund} = { id => "re_soak_$p->{i}_$o{seed}", amount => $amt };
        my $ev2 = stripe_event(type => 'charge.refunded', pi => $p->{pi},
            charge => "ch_soak_$p->{i}", amount => $amt,
            charge_amount => $p->{amount},
            refunds => [ [ $p->{refund}{id}, $amt ] ],
            id => "evt_rf_$p->{i}_$o{seed}");
        push @phase2, [ $ev2, 'refund' ] for 1 .. (rand() < $o{dup} ? 2 : 1);
        $n_refund++;
    } elsif ($r < $o{refund} + $o{chargeback}) {
        $p->{chargeback} = { id => "du_soak_$p->{i}_$o{seed}",
                             amount => $p->{amount} };
        my $ev2 = stripe_event(type => 'charge.dispute.funds_withdrawn',
            pi => $p->{pi}, dispute => $p->{chargeback}{id},
            amount => $p->{amount}, id => "evt_cb_$p->{i}_$o{seed}");
        push @phase2, [ $ev2, 'chargeback' ]
            for 1 .. (rand() < $o{dup} ? 2 : 1);
        $n_cb++;
    }
}
# replays: old payment events, sent again at the end (signed now)
push @phase2, map { [ $_->[0], 'replay' ] }
              grep { $_->[1] eq 'payment' } (shuffle @phase1)[0 .. $o{n} / 50];

note(sprintf('%d payments (%d lost, %d with duplicates), %d refunds, %d '
             . 'chargebacks; %d + %d deliveries', $o{n}, $n_lost, $n_dup,
             $n_refund, $n_cb, scalar @phase1, scalar @phase2));

# --- senders: a provider retries until it gets 200 --------------------------------

sub send_all {
    my ($list, $duration) = @_;
    my @d = shuffle @$list;
    # each sender's pause between deliveries, so the list takes $duration
    my $gap = @d ? $duration * $o{senders} / @d : 0;
    my @kids;
    for my $k (0 .. $o{senders} - 1) {
        my @mine = @d[ grep { $_ % $o{senders} == $k } 0 .. $#d ];
        my $pid = fork // die "fork: $!";
        if ($pid == 0) {
            srand($o{seed} * 31 + $k + $$);
            # nginx may close a connection under us (a reload): retry
            $SIG{PIPE} = 'IGNORE';
            my $fails = 0;
            for my $x (@mine) {
                my $until = time + 300;
                while (1) {
                    my $res = eval {
                        $sb->http('POST', '/webhooks/stripe', body => $x->[0],
                                  headers => stripe_headers($SECRET, $x->[0]),
                                  timeout => 20) };
                    last if $res && $res->{status} == 200;
                    if (time > $until) {
                        print STDERR "sender: gave up on a delivery\n";
                        $fails++;
                        last;
                    }
                    sleep 0.2 + rand(0.5);
                }
                sleep $gap * (0.5 + rand()) if $gap;
                sleep 0.5 + rand(1.5) if rand() < 0.01;    # a late one
            }
            POSIX::_exit($fails ? 1 : 0);
        }
        push @kids, $pid;
    }
    return @kids;
}

# --- chaos ------------------------------------------------------------------------

my @mt5_faults = (
    [ 'hang_after', '/api/trade/balance' ],
    [ 'hang', '/api/trade/balance' ],
    [ 'drop_after', '/api/trade/balance' ],
    [ 'drop_before', '/api/trade/balance' ],
    [ 'wrong_login', '/api/deal/get_page' ],
    [ 'latency', '/api/trade/balance' ],
);
my %did;

sub chaos_once {
    my @kinds = grep { $chaos{$_} } qw(mt5 mt5 mt5 kill kill pg redis nginx);
    return unless @kinds;
    my $k = $kinds[rand @kinds];
    if ($k eq 'mt5') {
        my ($kind, $ep) = @{ $mt5_faults[rand @mt5_faults] };
        $sim->fault(kind => $kind, endpoint => $ep,
                    count => 1 + int(rand(3)),
                    ($kind eq 'latency' ? (ms => 500 + int(rand(2500))) : ()));
        $did{"mt5 $kind"}++;
    } elsif ($k eq 'kill') {
        my $w = $workers[rand @workers];
        Mt5Credit::Worker::kill9($sb, $w);
        Mt5Credit::Worker::start($sb, $w, $conf);
        $did{'worker SIGKILL'}++;
    } elsif ($k eq 'pg') {
        $sb->stop_postgres('fast');
        sleep 0.5;
        $sb->start_postgres;
        $did{'PostgreSQL restart'}++;
    } elsif ($k eq 'redis') {
        $sb->stop_redis;
        sleep 1;
        $sb->start_redis;
        $did{'Redis stop/start'}++;
    } elsif ($k eq 'nginx') {
        $sb->reload_nginx;
        $did{'nginx reload'}++;
    }
}

sub run_phase {
    my ($name, $list, $duration) = @_;
    note("$name: " . scalar(@$list) . " deliveries over ${duration}s");
    my %kids = map { $_ => 1 } send_all($list, $duration);
    my $bad = 0;
    my $next = time + $o{'chaos-every'};
    while (%kids) {
        for my $pid (keys %kids) {
            if (waitpid($pid, WNOHANG) == $pid) {
                $bad++ if $?;
                delete $kids{$pid};
            }
        }
        if (time >= $next) {
            chaos_once();
            $next = time + $o{'chaos-every'} * (0.5 + rand());
        }
        sleep 0.1;
    }
    return $bad;
}

# waits for $cond while the chaos goes on
sub wait_chaos {
    my ($cond, $timeout) = @_;
    my $until = time + $timeout;
    my $next = time + $o{'chaos-every'};
    while (time < $until) {
        my $ok = eval { $cond->() };
        return 1 if $ok;
        if (time >= $next) {
            chaos_once();
            $next = time + $o{'chaos-every'} * (0.5 + rand());
        }
        sleep 0.5;
    }
    return 0;
}

my $sender_fail = run_phase('payments', \@phase1, $o{duration});

# refunds and chargebacks once the payments they undo are credited
note('waiting for the payments to be credited (chaos goes on)');
wait_chaos(sub {
    $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit WHERE kind = "
              . "'deposit' AND status <> 'done'") == 0 }, 900);
$sender_fail += run_phase('refunds, chargebacks, replays', \@phase2,
                          $o{duration} / 4);

# --- the end of the faults ----------------------------------------------------------

note('faults off; the workers finish');
$sim->clear_faults;
$sb->start_redis unless $sb->{pids}{redis};
for my $w (@workers) {
    next if $sb->{pids}{"worker-$w"};
    Mt5Credit::Worker::start($sb, $w, $conf);
}
my $settled = Mt5Credit::Worker::wait_for(sub {
    $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit "
              . "WHERE status IN ('pending', 'claimed', 'unknown')") == 0 },
    600);
Mt5Credit::Worker::stop($sb, $_) for @workers;

# the checker's own test: a violation planted behind the system's back
if ($o{sabotage}) {
    my ($ref, $login, $amount) = @{ $sb->psql(
        "SELECT reference, mt5_login, amount_minor FROM mt5credit.mt5_credit "
        . "WHERE kind = 'deposit' AND status = 'done' ORDER BY id LIMIT 1")
        ->[0] };
    my $major = Mt5Credit::Settlement::major($amount);
    if ($o{sabotage} eq 'double') {
        $sim->manual_deal(login => $login + 0, amount => "$major",
                          comment => $ref);
    } elsif ($o{sabotage} eq 'stray') {
        $sim->manual_deal(login => $login + 0, amount => '1.00',
                          comment => 'dep:999999999');
    } elsif ($o{sabotage} eq 'manual') {
        $sim->manual_deal(login => $login + 0, amount => '-0.01',
                          comment => 'adjustment');
    }
    note("sabotage: $o{sabotage} planted");
}

# --- the checker ---------------------------------------------------------------------

note('checking');
my @violations;
sub violation { push @violations, $_[0]; }

my %credit;    # provider_payment_id -> row
for my $r (@{ $sb->psql("SELECT provider_payment_id, id, reference, kind, "
                        . "status, mt5_login, amount_minor, direction FROM "
                        . "mt5credit.mt5_credit") }) {
    $credit{ $r->[0] } = { id => $r->[1], reference => $r->[2],
                           kind => $r->[3], status => $r->[4],
                           login => $r->[5], amount => $r->[6],
                           direction => $r->[7] };
}
my %deals;
for my $d (@{ $sim->ledger->{deals} }) {
    push @{ $deals{ $d->{Comment} // '' } }, $d;
}

sub minor {
    my ($profit) = @_;
    my ($sign, $int, $frac) = $profit =~ /^(-?)(\d+)\.(\d\d)$/
        or return undef;
    return ($sign ? -1 : 1) * ($int * 100 + $frac);
}

my ($expected, $matched) = (0, 0);
sub expect {
    my ($key, $login, $amount, $what) = @_;
    $expected++;
    my $c = $credit{$key};
    unless ($c) {
        violation("$what $key: no credit (lost)");
        return;
    }
    my $d = $deals{ $c->{reference} } || [];
    if (@$d == 0) {
        violation("$what $key ($c->{reference}, $c->{status}): no deal (lost)");
    } elsif (@$d > 1) {
        violation("$what $key ($c->{reference}): " . scalar(@$d)
                  . ' deals (double)');
    } elsif ($d->[0]{Login} != $login) {
        violation("$what $key ($c->{reference}): deal on $d->[0]{Login}, "
                  . "not $login (wrong account)");
    } elsif ((minor($d->[0]{Profit}) // 0) != $amount) {
        violation("$what $key ($c->{reference}): deal $d->[0]{Profit}, "
                  . "not $amount minor");
    } else {
        $matched++;
    }
}

for my $p (@pay) {
    if ($p->{lost}) {
        violation("lost payment $p->{pi} has a credit") if $credit{ $p->{pi} };
        next;
    }
    expect($p->{pi}, $p->{login}, $p->{amount}, 'payment');
    expect($p->{refund}{id}, $p->{login}, -$p->{refund}{amount}, 'refund')
        if $p->{refund};
    expect("$p->{chargeback}{id}:withdrawn", $p->{login},
           -$p->{chargeback}{amount}, 'chargeback')
        if $p->{chargeback};
}

my %explained = map { $_->{reference} => 1 } values %credit;
for my $comment (keys %deals) {
    violation("deal(s) with comment '$comment' that no credit explains")
        unless $explained{$comment};
}
my $credits = scalar keys %credit;
violation("$credits credits for $expected movements")
    if $credits != $expected;

my $unexplained = $sb->sql1(<<'SQL');
SELECT count(*) FROM mt5credit.mt5_credit c
WHERE c.status <> 'done'
  AND NOT EXISTS (SELECT 1 FROM mt5credit."case" k
                  WHERE k.credit_id = c.id AND k.status <> 'resolved')
SQL
violation("$unexplained credits not done without an open case")
    if $unexplained;

# --- reconciliation of the day against the provider's settlement ---------------------

my (@rows, $seq);
for my $p (@pay) {
    push @rows, { id => 'txn_' . ++$seq, category => 'charge', pi => $p->{pi},
                  source => "ch_soak_$p->{i}", gross => $p->{amount} };
    push @rows, { id => 'txn_' . ++$seq, category => 'refund', pi => $p->{pi},
                  source => $p->{refund}{id}, gross => -$p->{refund}{amount} }
        if $p->{refund};
    push @rows, { id => 'txn_' . ++$seq, category => 'dispute', pi => $p->{pi},
                  source => $p->{chargeback}{id},
                  gross => -$p->{chargeback}{amount} }
        if $p->{chargeback};
}
my $file = $sb->write_file('soak-settlement.csv',
                           Mt5Credit::Settlement::stripe_csv(\@rows));
my $control = $sb->write_file('soak-control.csv',
                              Mt5Credit::Settlement::control_csv(\@rows));
my $day = strftime('%Y-%m-%d', gmtime);
my ($rrc, $rout) = Mt5Credit::Worker::run($sb, 'reconcile', '-c', $conf,
    '--provider', 'stripe', '--day', $day, '--tz', 'UTC', '--currency', 'USD',
    '--format', 'stripe', '--settlement', $file, '--control', $control);
my ($run) = $rout =~ /^run (\d+):/m;
my %found = map { $_->[0] => $_->[1] } @{ $sb->psql(
    "SELECT kind, count(*) FROM mt5credit.recon_item WHERE run_id = "
    . ($run // 0) . " GROUP BY kind") };
violation("reconciliation did not run: $rout") unless $run;
my %want = $n_lost ? (settled_not_credited => $n_lost) : ();
for my $k (sort(keys %found, keys %want)) {
    next if ($found{$k} // 0) == ($want{$k} // 0);
    violation("reconciliation: $k " . ($found{$k} // 0) . ', injected '
              . ($want{$k} // 0));
}
delete $want{$_} for keys %found;

# --- the summary ---------------------------------------------------------------------

my %status = map { $_->[0] => $_->[1] } @{ $sb->psql(
    "SELECT kind || ' ' || status, count(*) FROM mt5credit.mt5_credit "
    . "GROUP BY 1") };
my %cases = map { $_->[0] => $_->[1] } @{ $sb->psql(
    "SELECT kind, count(*) FROM mt5credit.case GROUP BY 1") };
my $stats = $sim->stats;

print "\n== soak summary (seed $o{seed})\n";
printf "  %-40s %10s\n", 'payments (lost on purpose)', "$o{n} ($n_lost)";
printf "  %-40s %10d\n", 'refunds', $n_refund;
printf "  %-40s %10d\n", 'chargebacks', $n_cb;
printf "  %-40s %10d\n", 'webhook deliveries', @phase1 + @phase2;
printf "  %-40s %10d\n", 'expected balance deals', $expected;
printf "  %-40s %10d\n", 'matched exactly (amount, login, once)', $matched;
printf "  %-40s %10d\n", 'MT5 balance deals in the ledger',
       sum0(map { scalar @$_ } values %deals);
printf "  %-40s %10s\n", "credits: $_", $status{$_} for sort keys %status;
printf "  %-40s %10s\n", "cases: $_", $cases{$_} for sort keys %cases;
printf "  %-40s %10s\n", "chaos: $_", $did{$_} for sort keys %did;
printf "  %-40s %10s\n", "recon: $_", $found{$_} for sort keys %found;
printf "  %-40s %10s\n", 'recon exit', $rrc;
printf "  %-40s %10s\n", 'all settled before the deadline',
       $settled ? 'yes' : 'NO';
printf "  %-40s %10s\n", 'senders that gave up', $sender_fail;
printf "  %-40s %10.1f s\n", 'wall time', time - $t0;
violation('a sender gave up on a delivery') if $sender_fail;

my @problems = $sb->log_problems;
violation("nginx: $_") for @problems;

if (@violations) {
    print "\n== VIOLATIONS (" . scalar(@violations) . ")\n";
    print "  $_\n" for @violations[0 .. ($#violations < 49 ? $#violations : 49)];
    exit 1;
}
print "\n== no violations: every movement exactly once, on the right "
    . "account, reconciled\n";
exit 0;
