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
#     reloaded mid-traffic; once, the database is brought back to a
#     snapshot (rollback), and once an asynchronous streaming standby is
#     promoted when the primary crashes (failover);
#   - the workers run as two hosts: each half keeps its claims in a
#     state_dir of its own;
#   - the MT5 server's UTC offset steps (+1 h, back, -10 min) while
#     credits are unknown.
# Money goes out too: withdrawals from EUR accounts that were paid into
# by card are requested, prepared and approved by two people, debited in
# MT5 by the same workers, and sent back the way the money came by
# `mt5credit payout` rounds: refunds to the deposits first, a payout for
# the rest (sql/042, 043): the refunds to the Stripe double, the payouts
# to a bank-transfer PSP's double (the generic payout rail); both decline
# nothing but time out after paying, drop requests before paying, answer
# 500 after paying and fail their listings.  Stripe's webhooks of our own
# refunds come back through the edge, duplicated.
# Then the faults stop, the workers finish, and the checker compares the
# simulator's ledger with what the provider did:
#   - exactly one balance deal per credited payment, refund and chargeback,
#     of the exact amount, on the right login; no deal twice, none lost,
#     none that no credit explains;
#   - every credit not done has an open case saying why;
#   - exactly one MT5 debit per withdrawal, of its amount; its legs add
#     up to it; each leg made exactly once at the provider (a refund of
#     its payment, succeeded; the payout of the rest to its destination,
#     paid); our own refunds' webhooks never a second debit;
#   - reconciliation of the day against the provider's settlement finds
#     exactly what was injected (the lost webhooks), nothing else; the
#     EUR day's reconciliation at each (Stripe's deposits and refund
#     legs, the PSP's payouts) finds nothing.
# It prints a summary and exits 1 on any violation.
#
#   perl t/soak/soak.pl [--n 10000] [--seed S] [--workers 2] [--senders 4]
#                       [--dup 0.3] [--refund 0.08] [--chargeback 0.04]
#                       [--lost 0.002] [--late-fail 0.05] [--withdrawals 0.02]
#                       [--chaos mt5,kill,pg,redis,nginx,payout,clock,dbstall,rollback,failover]
#                       [--chaos-every 3]
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
use JSON::PP;
use lib "$FindBin::Bin/../lib";
use Mt5Credit::Provider qw(stripe_event stripe_headers);
use Mt5Credit::Settlement;
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my %o = (n => 10000, seed => time % 100000, workers => 2, senders => 4,
         dup => 0.3, refund => 0.08, chargeback => 0.04, lost => 0.002,
         'late-fail' => 0.05,
         chaos => 'mt5,kill,pg,redis,nginx,payout,clock,dbstall,rollback,'
                  . 'failover',
         'chaos-every' => 3, logins => 40, duration => undef,
         sabotage => '', withdrawals => 0.02);
GetOptions(\%o, 'n=i', 'seed=i', 'workers=i', 'senders=i', 'dup=f',
           'refund=f', 'chargeback=f', 'lost=f', 'late-fail=f', 'chaos=s',
           'chaos-every=f', 'logins=i', 'duration=f', 'sabotage=s',
           'withdrawals=f')
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

# the EUR accounts money is withdrawn from, funded in MT5 directly
my $n_wd = int($o{n} * $o{withdrawals} + 0.5);
$sim->add_group(group => 'real\\eur', currency => 'EUR', currency_digits => 2);
my @eur = map { 69001 + $_ } 0 .. $n_wd - 1;
for my $l (@eur) {
    $sim->add_account(login => $l, group => 'real\\eur',
                      balance => '1000000.00', credit => '0.00', rights => 1);
    $sb->register_account('alice', $l, 'EUR');
}

# the provider's API, for payouts: the Stripe double
my $api_key = 'rk_soak_' . join('', map { ('a' .. 'z')[rand 26] } 1 .. 20);
my $api_port = Mt5Credit::Sandbox::free_port();
my $api_state = $sb->dir . '/stripe-api.json';
$sb->write_file('stripe-api.json', '{}');
$sb->spawn('stripesim', 'perl', "$FindBin::Bin/../stripesim/stripesim.pl",
           $api_port, $api_state, $api_key);
Mt5Credit::Sandbox::wait_port($api_port, 'stripesim');
my $api_key_file = $sb->write_file('stripe-api.key', "$api_key\n");
chmod 0600, $api_key_file;

# the payout legs' rail: a bank-transfer PSP (the generic payout API),
# paying EUR to the clients' beneficiary tokens
my $psp_key = 'psp_soak_' . join('', map { ('a' .. 'z')[rand 26] } 1 .. 20);
my $psp_port = Mt5Credit::Sandbox::free_port();
$sb->spawn('payoutsim', 'perl', "$FindBin::Bin/../payoutsim/payoutsim.pl",
           $psp_port, $sb->dir . '/psp.json', $psp_key);
Mt5Credit::Sandbox::wait_port($psp_port, 'payoutsim');
my $psp_key_file = $sb->write_file('psp-api.key', "$psp_key\n");
chmod 0600, $psp_key_file;
$sb->psql("INSERT INTO mt5credit.payout_currency VALUES ('bank', 'EUR')");

my %wopt = (call_timeout => 2, lease => 11, settle_margin => 1,
            resolve_retry => 1,
            provider_api_url => "http://127.0.0.1:$api_port",
            provider_api_key_file => $api_key_file,
            payout_timeout => 1, payout_lease => 6, payout_margin => 0,
            payout_backoff => 1, payout_recheck => 1,
            payout_max_lookups => 1000, payout_interval => 1,
            payout_rail => 'generic', payout_provider => 'bank',
            payout_api_url => "http://127.0.0.1:$psp_port",
            payout_api_key_file => $psp_key_file);
# two hosts: each keeps its workers' claims in a state_dir of its own,
# the workers named host:pid (the default)
my %conf = map {
    $_ => Mt5Credit::Worker::config($sb, "soak-$_",
        servers => [ [ 'live1', $sim,
                       recon_groups => 'real\\usd, real\\eur' ] ],
        %wopt, worker_name => '', state_dir => $sb->dir . "/state-host-$_",
        recon_database => '"host=127.0.0.1 port=' . $sb->pg_port
                          . ' dbname=mt5credit user=recon"',
        recon_out => $sb->dir)
} qw(a b);
my $conf = $conf{a};
my @workers = map { "soak$_" } 1 .. $o{workers};
my %host_of = map { $workers[$_] => $_ % 2 ? 'b' : 'a' } 0 .. $#workers;
Mt5Credit::Worker::start($sb, $_, $conf{ $host_of{$_} }) for @workers;

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

# card deposits into the EUR accounts, credited before the withdrawals
# are prepared: each withdrawal's plan refunds them first (newest first)
# and pays the rest out.  One withdrawal per account, so no plan changes
# between preparation and approval.
my (@eur_pay, %api_payments);
if ($n_wd) {
    note('card deposits into the EUR accounts');
    my $k = 0;
    for my $l (@eur) {
        for (1 .. 1 + int(rand(3))) {
            my $amount = 500 + int(rand(80000));
            my $ref = $sb->sql1("SELECT reference FROM mt5credit."
                . "create_deposit('alice', 'soak-eur-' || " . ++$k
                . " || '-$o{seed}', 'stripe', 'live1', $l, $amount, 'EUR')",
                user => 'portal');
            my $pi = "pi_soak_eur_${k}_$o{seed}";
            push @eur_pay, { login => $l, amount => $amount, pi => $pi };
            $api_payments{$pi} = { currency => 'eur', amount => $amount };
            my $ev = stripe_event(deposit => $ref, amount => $amount,
                                  currency => 'EUR', pi => $pi,
                                  id => "evt_eur_${k}_$o{seed}");
            my $res = $sb->http('POST', '/webhooks/stripe', body => $ev,
                                headers => stripe_headers($SECRET, $ev));
            die "EUR deposit webhook: $res->{status}"
                unless $res->{status} == 200;
        }
    }
    $sb->write_file('stripe-api.json',
                    JSON::PP->new->canonical->encode(\%api_payments));
    Mt5Credit::Worker::wait_for(sub {
        $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit WHERE kind = "
                  . "'deposit' AND paid_currency = 'EUR' AND status = "
                  . "'done'") == @eur_pay }, 120)
        or die 'the EUR deposits were not credited';
}

# withdrawals: requested by the client and prepared by one person now;
# approved by another a few at a time while the chaos runs (approval is
# what queues the MT5 debit, and the debit's deal the payout)
my (@wd, @to_approve);
if ($n_wd) {
    my @vals = map { my $l = $eur[$_ - 1];
                     "($_, $l, " . (1000 + int(rand(200000))) . ")" }
               1 .. $n_wd;
    my $rows = $sb->psql("SELECT v.i, w.reference, w.mt5_login, "
        . "w.amount_minor, w.destination FROM (VALUES " . join(',', @vals)
        . ") AS v (i, login, amount) CROSS JOIN LATERAL "
        . "mt5credit.withdrawal_request('alice', 'soak-wd-' || v.i || "
        . "'-$o{seed}', 'bank', 'live1', v.login, v.amount, 'EUR', "
        . "'bnf_soak_' || v.i) w", user => 'portal');
    @wd = map { { ref => $_->[1], login => $_->[2], amount => $_->[3],
                  dest => $_->[4] } } @$rows;
    my $refs = join ',', map { "'$_->{ref}'" } @wd;
    my $digests = $sb->psql("SELECT r, mt5credit.withdrawal_prepare(r, "
        . "'soak') FROM unnest(ARRAY[$refs]) AS r", user => 'ops_alice');
    @to_approve = @$digests;
}

# with a rollback to come, approvals wait for its snapshot, so some are
# made in the part of time the restore takes back
my $approvals_open = !$chaos{rollback};

# approvals the database lost (a restore, a failover) are given again by
# the same two people: the withdrawal is prepared again there, and its
# debit, which the lost timeline may have made, is looked up first (037)
sub approve_again {
    my %queued = map { $_->[0] => 1 } @to_approve;
    push @to_approve, grep { !$queued{ $_->[0] } } @{ $sb->psql(
        "SELECT reference, prepared_digest FROM mt5credit.withdrawal "
        . "WHERE status = 'prepared'") };
}

sub approve_some {
    my ($all) = @_;
    return unless $approvals_open;
    my @now = splice @to_approve, 0,
                     $all ? scalar @to_approve : 1 + int($n_wd / 12);
    return unless @now;
    eval {
        $sb->psql("SELECT mt5credit.withdrawal_approve(v.r, v.d, 'soak') "
            . "FROM (VALUES " . join(',', map { "('$_->[0]', '$_->[1]')" }
                                      @now)
            . ") AS v (r, d)", user => 'ops_bob');
        1;
    } or unshift @to_approve, @now;    # PostgreSQL restarting: later
}
Mt5Credit::Worker::start_cmd($sb, 'payout', 'payout', $conf) if $n_wd;

note(sprintf('%d payments (%d lost, %d with duplicates), %d refunds, %d '
             . 'chargebacks; %d + %d deliveries; %d withdrawals', $o{n},
             $n_lost, $n_dup, $n_refund, $n_cb, scalar @phase1,
             scalar @phase2, $n_wd));

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
    approve_some(0);
    my @kinds = grep { $chaos{$_} } qw(mt5 mt5 mt5 kill kill pg redis nginx
                                       payout clock dbstall);
    @kinds = grep { $_ ne 'payout' } @kinds unless $n_wd;
    return unless @kinds;
    my $k = $kinds[rand @kinds];
    if ($k eq 'mt5') {
        my ($kind, $ep) = @{ $mt5_faults[rand @mt5_faults] };
        $sim->fault(kind => $kind, endpoint => $ep,
                    count => 1 + int(rand(3)),
                    ($kind eq 'latency' ? (ms => 500 + int(rand(2500))) : ()));
        $did{"mt5 $kind"}++;
    } elsif ($k eq 'kill' && $n_wd && rand() < 0.2) {
        Mt5Credit::Worker::kill9($sb, 'payout');
        Mt5Credit::Worker::start_cmd($sb, 'payout', 'payout', $conf);
        $did{'payout sender SIGKILL'}++;
    } elsif ($k eq 'kill') {
        my $w = $workers[rand @workers];
        Mt5Credit::Worker::kill9($sb, $w);
        Mt5Credit::Worker::start($sb, $w, $conf{ $host_of{$w} });
        $did{'worker SIGKILL'}++;
    } elsif ($k eq 'payout') {
        my @f = ([ payout_post => 'delay_after', payout_delay => 3 ],
                 [ payout_post => 'drop_before', payout_delay => 3 ],
                 [ payout_post => 'http500_after' ],
                 [ payout_post => 'garbage_after' ],
                 [ payout_list => 'http500' ],
                 [ refund_post => 'delay_after', refund_delay => 3 ],
                 [ refund_post => 'drop_before', refund_delay => 3 ],
                 [ refund_post => 'http500_after' ],
                 [ refund_post => 'garbage_after' ],
                 [ refund_list => 'http500' ], [ refund_get => 'http500' ],
                 [], []);
        my %f = @{ $f[rand @f] };
        my $j = JSON::PP->new->canonical;
        my %to_psp = map { $_ => $f{$_} } grep { /^payout_/ } keys %f;
        my %to_stripe = map { $_ => $f{$_} } grep { !/^payout_/ } keys %f;
        $sb->write_file('psp.json.faults', $j->encode(\%to_psp));
        $sb->write_file('stripe-api.json.faults', $j->encode(\%to_stripe));
        my ($fk) = grep { /_(post|list|get)$/ } keys %f;
        $did{'provider ' . ($fk ? "$fk $f{$fk}" : 'healed')}++;
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
    } elsif ($k eq 'dbstall') {
        # one worker's database session stops answering for up to 7 s (a
        # stalled backend, a black-holed path), at whatever step it is:
        # a claim, the record of a deal, the claim sent ahead during a
        # call.  The backend is stopped, not the worker: the worker sees
        # what it would see on the wire
        my @pids = map { $_->[0] } @{ $sb->psql(
            "SELECT pid FROM pg_stat_activity WHERE usename = 'worker' "
            . "AND backend_type = 'client backend'") };
        return unless @pids;
        my $pid = $pids[rand @pids];
        kill 'STOP', $pid or return;
        eval { sleep 1 + rand 6 };
        kill 'CONT', $pid;
        $did{'worker database stall'}++;
    } elsif ($k eq 'clock') {
        # the server's UTC offset steps, as at summer time (+1 h, -1 h from
        # summer) or a clock set back 10 min, with credits unknown.  Not
        # within two hours of midnight UTC: these steps follow no time
        # zone's rules, so the soak's reconciliation has no time_zone and
        # cuts the day by the offset measured at its run (t/63 covers the
        # zoned day cut), and a soak is shorter than that
        my @utc = gmtime;
        my $min = $utc[2] * 60 + $utc[1];
        return if $min < 120 || $min >= 22 * 60;
        my $off = (120, 180, 110)[rand 3];
        $sim->set_offset($off);
        $did{"MT5 offset step to UTC+$off min"}++;
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

# the chaos is drawn at random: a run whose draws spared every worker
# still kills one, mid-work, before the database goes back in time
if ($chaos{kill} && !$did{'worker SIGKILL'}) {
    my $w = $workers[rand @workers];
    Mt5Credit::Worker::kill9($sb, $w);
    Mt5Credit::Worker::start($sb, $w, $conf{ $host_of{$w} });
    $did{'worker SIGKILL'}++;
}

# one rollback: the database is snapshotted once every payment's webhook
# is stored, the work goes on under the chaos, then the snapshot comes
# back (a restore, an asynchronous failover).  Credits made meanwhile are
# pending again, approvals made meanwhile are gone: the workers must
# notice and look each up, and the withdrawals approved again must not be
# debited twice.
if ($chaos{rollback}) {
    my $data = $sb->dir . '/pg';
    $sb->stop_postgres('fast');
    system('cp', '-a', $data, "$data-snapshot") == 0 or die 'snapshot';
    $sb->start_postgres;
    $approvals_open = 1;
    note('database snapshot taken; the work goes on');
    wait_chaos(sub { 0 }, 8 + rand 8);
    $sb->stop_postgres('fast');
    system('rm', '-rf', $data) == 0 or die 'restore';
    system('mv', "$data-snapshot", $data) == 0 or die 'restore';
    $sb->start_postgres;
    approve_again();
    $did{'database rollback (snapshot restored)'}++;
    note('the snapshot is back: the database went back in time');
}

# one failover: an asynchronous streaming standby follows the database
# (pg_basebackup -R), the work goes on under the chaos, the primary
# crashes and the standby is promoted, taking the primary's address (a
# virtual IP, Patroni).  What the standby had not received is gone: the
# claims and deals the workers saw committed last.  They must notice
# (their kept claims, MT5's witness: any host) and look each up; a claim
# whose COMMIT never returned was never acted on.
if ($chaos{failover}) {
    my $PGBIN = $Mt5Credit::Sandbox::PGBIN;
    my $data = $sb->dir . '/pg';
    my $standby = $sb->dir . '/pg-standby';
    my $sport = Mt5Credit::Sandbox::free_port();
    Mt5Credit::Sandbox::run_cmd("$PGBIN/pg_basebackup", '-h', '127.0.0.1',
        '-p', $sb->pg_port, '-U', 'mt5', '-D', $standby, '-R', '-X',
        'stream', '-c', 'fast');
    open my $c, '>>', "$standby/postgresql.conf" or die $!;
    print $c "port = $sport\n";
    close $c;
    chmod 0700, $standby;
    $sb->spawn('pg-standby', "$PGBIN/postgres", '-D', $standby);
    Mt5Credit::Sandbox::wait_port($sport, 'the standby');
    note('a streaming standby follows the database; the work goes on');
    wait_chaos(sub { 0 }, 4 + rand 6);

    $sb->stop_postgres('immediate');
    Mt5Credit::Sandbox::run_cmd("$PGBIN/pg_ctl", '-D', $standby, '-w',
                                'promote');
    $sb->reap('pg-standby', 'INT', 60);
    system('rm', '-rf', $data) == 0 or die 'failover';
    system('mv', $standby, $data) == 0 or die 'failover';
    open $c, '>>', "$data/postgresql.conf" or die $!;
    print $c 'port = ' . $sb->pg_port . "\n";
    close $c;
    $sb->start_postgres;
    approve_again();
    $did{'database failover (async standby promoted)'}++;
    note('the primary crashed; its standby was promoted in its place');
}

# refunds and chargebacks once the payments they undo are credited
note('waiting for the payments to be credited (chaos goes on)');
wait_chaos(sub {
    $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit WHERE kind = "
              . "'deposit' AND status <> 'done'") == 0 }, 900);
$sender_fail += run_phase('refunds, chargebacks, replays', \@phase2,
                          $o{duration} / 4);

# --- the end of the faults ----------------------------------------------------------

note('faults off; the workers finish');
Mt5Credit::Worker::wait_for(sub { approve_some(1); !@to_approve }, 60);
$sim->clear_faults;
$sim->set_offset(120) if $chaos{clock};
$sb->start_redis unless $sb->{pids}{redis};
for my $w (@workers) {
    next if $sb->{pids}{"worker-$w"};
    Mt5Credit::Worker::start($sb, $w, $conf{ $host_of{$w} });
}
my $settled = Mt5Credit::Worker::wait_for(sub {
    $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit "
              . "WHERE status IN ('pending', 'claimed', 'unknown')") == 0 },
    600);
Mt5Credit::Worker::stop($sb, $_) for @workers;

# the legs finish: every refund succeeded, every payout sent and accepted,
# then the provider pays
my $payouts_done = 1;
my ($n_own_hooks, $own_hooks_refused) = (0, 0);
my $n_payout_legs = $n_wd ? $sb->sql1("SELECT count(*) FROM "
    . "mt5credit.withdrawal_leg l JOIN mt5credit.withdrawal w ON w.id = "
    . "l.withdrawal_id AND w.plan_no = l.plan_no WHERE l.kind = 'payout' "
    . "AND w.status = 'approved'") : 0;
if ($n_wd) {
    $sb->write_file($_, '{}') for 'stripe-api.json.faults', 'psp.json.faults';
    Mt5Credit::Worker::start_cmd($sb, 'payout', 'payout', $conf)
        unless $sb->{pids}{'worker-payout'};
    $payouts_done = Mt5Credit::Worker::wait_for(sub {
        $sb->sql1("SELECT count(*) FROM mt5credit.payout WHERE status IN "
                  . "('accepted', 'paid')") == $n_payout_legs
        && $sb->sql1("SELECT count(*) FROM mt5credit.withdrawal_refund "
                     . "WHERE status <> 'succeeded'") == 0 }, 300);
    for my $po (@{ provider_payouts() }) {
        $sb->http('POST', '/control/payout', port => $psp_port,
                  body => JSON::PP->new->encode({ id => $po->{id},
                                                  status => 'paid' }),
                  headers => [ [ 'Content-Type', 'application/json' ] ]);
    }
    $payouts_done &&= Mt5Credit::Worker::wait_for(sub {
        $sb->sql1("SELECT count(*) FROM mt5credit.payout WHERE status = "
                  . "'paid'") == $n_payout_legs }, 120);
    Mt5Credit::Worker::stop($sb, 'payout');

    # Stripe tells us of our own refunds, as of any: the cumulative
    # charge.refunded of each payment and each refund's refund.updated,
    # twice.  None may become a refund debit (the credit count below).
    for my $pi (sort keys %api_payments) {
        my @mine = grep { $_->{payment_intent} eq $pi }
                   @{ provider_book()->{refunds} || [] };
        next unless @mine;
        my $total = 0;
        $total += $_->{amount} for @mine;
        my @ev = (stripe_event(type => 'charge.refunded', pi => $pi,
                               currency => 'EUR', amount => $total,
                               charge_amount => $api_payments{$pi}{amount}),
                  map { stripe_event(type => 'refund.updated', pi => $pi,
                                     currency => 'EUR',
                                     amount => $_->{amount},
                                     refund => { id => $_->{id},
                                                 metadata => $_->{metadata} })
                      } @mine);
        for my $ev ((@ev) x 2) {
            my $res = $sb->http('POST', '/webhooks/stripe', body => $ev,
                                headers => stripe_headers($SECRET, $ev));
            $n_own_hooks++;
            $own_hooks_refused++ unless $res->{status} == 200;
        }
    }
}

sub provider_book {
    my $r = $sb->http('GET', '/control/payouts', port => $api_port);
    return JSON::PP->new->decode($r->{body});
}

# the PSP's payouts, in the Stripe double's words the checker reads
sub provider_payouts {
    my $r = $sb->http('GET', '/control/payouts', port => $psp_port);
    my $b = JSON::PP->new->decode($r->{body});
    return [ map { { %$_, amount => $_->{amount_minor},
                     currency => lc $_->{currency},
                     destination => $_->{beneficiary},
                     metadata => { %{ $_->{metadata} || {} },
                                   mt5credit_reference => $_->{reference} } } }
             @{ $b->{payouts} } ];
}

sub provider_posts {
    my $r = $sb->http('GET', '/control/payouts', port => $psp_port);
    return sum0(values %{ provider_book()->{posts} },
                values %{ JSON::PP->new->decode($r->{body})->{posts} });
}

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

expect($_->{pi}, $_->{login}, $_->{amount}, 'card deposit (EUR)')
    for @eur_pay;
violation("$own_hooks_refused of our own refunds' webhooks were refused")
    if $own_hooks_refused;

my %explained = map { $_->{reference} => 1 } values %credit;
for my $comment (keys %deals) {
    violation("deal(s) with comment '$comment' that no credit explains")
        unless $explained{$comment};
}
my $credits = scalar keys %credit;
violation("$credits credits for $expected movements")
    if $credits != $expected + $n_wd;

# money out: one debit per withdrawal, its legs adding up to it, each leg
# made once at the provider as planned, nothing else
my (%paid_out, %refunded, %leg);
my $book = $n_wd ? provider_book() : { payouts => [], refunds => [] };
push @{ $paid_out{ $_->{metadata}{mt5credit_reference} // '' } }, $_
    for $n_wd ? @{ provider_payouts() } : ();
push @{ $refunded{ $_->{metadata}{mt5credit_refund} // '' } }, $_
    for @{ $book->{refunds} || [] };
# the approved plans, each leg with our record of it
for my $r (@{ $sb->psql(
        "SELECT w.reference, l.leg, l.kind, l.amount_minor, "
        . "l.account_amount_minor, l.payment_key, coalesce(wr.reference, ''), "
        . "coalesce(wr.status, p.status, 'none'), "
        . "coalesce(wr.provider_refund_id, p.provider_payout_id, ''), "
        . "coalesce(wr.idempotency_key, '') FROM mt5credit.withdrawal w "
        . "JOIN mt5credit.withdrawal_leg l ON l.withdrawal_id = w.id AND "
        . "l.plan_no = w.plan_no LEFT JOIN mt5credit.withdrawal_refund wr ON "
        . "wr.withdrawal_id = w.id AND wr.leg = l.leg LEFT JOIN "
        . "mt5credit.payout p ON p.withdrawal_id = w.id AND p.leg = l.leg "
        . "WHERE w.status = 'approved' ORDER BY w.id, l.leg") }) {
    push @{ $leg{ $r->[0] } }, { leg => $r->[1], kind => $r->[2],
        amount => $r->[3], share => $r->[4], pi => $r->[5], ref => $r->[6],
        status => $r->[7], id => $r->[8], key => $r->[9] };
}
my ($wd_matched, $n_refund_legs, $n_mixed) = (0, 0, 0);
WD: for my $w (@wd) {
    my ($id) = $w->{ref} =~ /^wd_0*(\d+)$/;
    $expected++;
    my $c = $credit{"payout:$w->{ref}"};
    my $d = $deals{"wd:$id"} || [];
    my @legs = @{ $leg{ $w->{ref} } || [] };
    my $share = 0;
    $share += $_->{share} for @legs;
    if (!$c || $c->{status} ne 'done') {
        violation("withdrawal $w->{ref}: debit " . ($c ? $c->{status}
                                                        : 'missing'));
        next;
    } elsif (@$d != 1) {
        violation("withdrawal $w->{ref}: " . scalar(@$d) . ' debit deals');
        next;
    } elsif ($d->[0]{Login} != $w->{login}
             || (minor($d->[0]{Profit}) // 0) != -$w->{amount}) {
        violation("withdrawal $w->{ref}: debit $d->[0]{Profit} on "
                  . "$d->[0]{Login}");
        next;
    } elsif (!@legs || $share != $w->{amount}) {
        violation("withdrawal $w->{ref}: legs add up to $share of "
                  . "$w->{amount}");
        next;
    }
    my $payout_legs = 0;
    for my $l (@legs) {
        if ($l->{kind} eq 'refund') {
            $n_refund_legs++;
            my $at = $refunded{ $l->{ref} } || [];
            if (@$at != 1) {
                violation("withdrawal $w->{ref} leg $l->{leg}: "
                          . scalar(@$at) . ' refunds at the provider');
                next WD;
            }
            my $x = $at->[0];
            if ($x->{amount} != $l->{amount} || $x->{currency} ne 'eur'
                || $x->{payment_intent} ne $l->{pi}
                || $x->{status} ne 'succeeded') {
                violation("withdrawal $w->{ref} leg $l->{leg}: the provider "
                          . "refunded $x->{amount} $x->{currency} of "
                          . "$x->{payment_intent}, $x->{status}");
                next WD;
            }
            if ($l->{status} ne 'succeeded' || $l->{id} ne $x->{id}) {
                violation("withdrawal $w->{ref} leg $l->{leg}: our record "
                          . "$l->{status} $l->{id}, the provider's $x->{id}");
                next WD;
            }
            next;
        }
        $payout_legs++;
        my $p = $paid_out{ $w->{ref} } || [];
        if (@$p != 1) {
            violation("withdrawal $w->{ref}: " . scalar(@$p)
                      . ' payouts at the provider');
            next WD;
        } elsif ($p->[0]{amount} != $l->{amount}
                 || $p->[0]{currency} ne 'eur'
                 || $p->[0]{destination} ne $w->{dest}
                 || $p->[0]{status} ne 'paid') {
            violation("withdrawal $w->{ref}: the provider paid "
                      . "$p->[0]{amount} $p->[0]{currency} to "
                      . "$p->[0]{destination}, $p->[0]{status}");
            next WD;
        } elsif ($l->{status} ne 'paid' || $l->{id} ne $p->[0]{id}) {
            violation("withdrawal $w->{ref}: our payout record $l->{status} "
                      . "$l->{id}, the provider's $p->[0]{id}");
            next WD;
        }
    }
    if (!$payout_legs && $paid_out{ $w->{ref} }) {
        violation("withdrawal $w->{ref}: paid out, with no payout leg");
        next;
    }
    $n_mixed++ if $payout_legs && @legs > 1;
    $wd_matched++;
    $matched++;
}
violation(scalar(keys %paid_out) . " withdrawals paid out, $n_payout_legs "
          . "planned") if keys(%paid_out) != $n_payout_legs;
violation(scalar(keys %refunded) . " refunds at the provider, "
          . "$n_refund_legs planned") if keys(%refunded) != $n_refund_legs;

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
# the day alone (--window 0): the soak's file settles everything the same
# day, so a lost webhook is a break now, not in transit for a week
my ($rrc, $rout) = Mt5Credit::Worker::run($sb, 'reconcile', '-c', $conf,
    '--provider', 'stripe', '--day', $day, '--tz', 'UTC', '--currency', 'USD',
    '--format', 'stripe', '--settlement', $file, '--control', $control,
    '--window', '0');
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

# the EUR day at each provider, as its rows x our credits and legs x the
# MT5 debits: the card deposits and the refund legs at Stripe, the payout
# legs at the bank-transfer PSP
my ($wrc, $wout) = (0, '');
if ($n_wd) {
    my $now = strftime('%Y-%m-%dT%H:%M:%SZ', gmtime);
    my %file = (stripe => [], bank => []);
    push @{ $file{stripe} }, [ "g_$_->{pi},payment,$_->{pi},,EUR,"
        . Mt5Credit::Settlement::major($_->{amount}) . ",0,$now,po_day,",
        $_->{amount} ] for @eur_pay;
    push @{ $file{stripe} }, [ "g_$_->{id},refund,$_->{payment_intent},"
        . "$_->{id},EUR,-" . Mt5Credit::Settlement::major($_->{amount})
        . ",0,$now,po_day,", -$_->{amount} ] for @{ $book->{refunds} || [] };
    push @{ $file{bank} }, [ "g_$_->{id},withdrawal,,$_->{id},EUR,-"
        . Mt5Credit::Settlement::major($_->{amount}) . ",0,"
        . strftime('%Y-%m-%dT%H:%M:%SZ', gmtime $_->{created})
        . ",po_day,$_->{metadata}{mt5credit_reference}", -$_->{amount} ]
        for @{ provider_payouts() };
    for my $provider (sort keys %file) {
        my @rows = @{ $file{$provider} };
        my $sum = sum0(map { $_->[1] } @rows);
        my $wf = $sb->write_file("soak-$provider-eur.csv", "id,type,"
            . "payment_id,movement_id,currency,amount,fee,created_at,"
            . "payout_id,withdrawal_reference\n"
            . join('', map { "$_->[0]\n" } @rows));
        my $wc = $sb->write_file("soak-$provider-eur-control.csv",
            "payout_id,currency,amount,count\npo_day,EUR,"
            . Mt5Credit::Settlement::major($sum) . "," . @rows . "\n");
        my ($rc, $out) = Mt5Credit::Worker::run($sb, 'reconcile', '-c',
            $conf, '--provider', $provider, '--day', $day, '--tz', 'UTC',
            '--currency', 'EUR', '--format', 'generic', '--settlement', $wf,
            '--control', $wc, '--window', '0');
        violation("$provider EUR reconciliation: exit $rc: " . join(' | ',
                  grep { /^run|mismatch|settled|debited/ } split /\n/, $out))
            if $rc != 0;
        $wrc ||= $rc;
        $wout .= $out;
    }
}

# --- the money journal after it all (sql/081) -----------------------------------------

# rolled back and failed over, the journal went back with the facts it
# chains: sealed now, every chain, every fact and the period must fit
my $jdir = $sb->audit_witness('soak_auditor');
my $aconn = 'host=127.0.0.1 port=' . $sb->pg_port
            . ' dbname=mt5credit user=soak_auditor';
my ($arc, $aout) = Mt5Credit::Worker::run($sb, 'audit', 'seal', '--key',
    "$jdir/audit.key", '--heads', "$jdir/heads", '--database', $aconn);
violation("journal: seal exited $arc: $aout") if $arc != 0;
($arc, $aout) = Mt5Credit::Worker::run($sb, 'audit', 'verify', '--pubkey',
    "$jdir/audit.pub", '--heads', "$jdir/heads", '--database', $aconn);
violation("journal: verify exited $arc: " . join(' | ',
          grep { /^(EDIT|REWIND|HEADS)/ } split /\n/, $aout)) if $arc != 0;
my $journal = $sb->sql1('SELECT count(*) FROM mt5credit.journal');

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
printf "  %-40s %10s\n", 'journal entries verified (exit)',
       "$journal ($arc)";
printf "  %-40s %10s\n", 'withdrawals debited and paid out once',
       "$wd_matched of $n_wd";
printf "  %-40s %10s\n", 'refund legs (withdrawals with a payout too)',
       "$n_refund_legs ($n_mixed)";
printf "  %-40s %10s\n", 'payout legs', $n_payout_legs;
printf "  %-40s %10s\n", 'our refunds\' webhooks sent back', $n_own_hooks;
if ($n_wd) {
    printf "  %-40s %10s\n", 'refund and payout POSTs (a key each)',
           provider_posts();
    printf "  %-40s %10s\n", 'refunds unknown, then looked up',
           $sb->sql1("SELECT count(DISTINCT refund_id) FROM "
                     . "mt5credit.withdrawal_refund_history WHERE to_status "
                     . "= 'unknown'");
    printf "  %-40s %10s\n", 'payouts unknown, then looked up',
           $sb->sql1("SELECT count(DISTINCT payout_id) FROM "
                     . "mt5credit.payout_history WHERE to_status = "
                     . "'unknown'");
}
printf "  %-40s %10s\n", 'EUR recon exit (Stripe, the bank)', $wrc if $n_wd;
printf "  %-40s %10s\n", 'all settled before the deadline',
       $settled ? 'yes' : 'NO';
printf "  %-40s %10s\n", 'senders that gave up', $sender_fail;
printf "  %-40s %10.1f s\n", 'wall time', time - $t0;
violation('a sender gave up on a delivery') if $sender_fail;
violation('the payouts did not all finish before the deadline')
    unless $payouts_done;

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
