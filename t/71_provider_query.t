#!/usr/bin/perl
#
# When the webhook never comes: `mt5credit poll-provider` asks the
# provider (a Stripe API double, t/stripesim/) about deposits that should
# have been paid by now, and feeds trusted answers to ingest(), the webhook
# path's own function.  Impossible:
#   - a lost webhook leaving a paid deposit uncredited (a Checkout
#     Session or a PaymentIntent)
#   - the webhook and the query both crediting one payment (one unique
#     key decides, whichever comes first)
#   - a timeout, an HTTP error or an answer about another session changing
#     anything but the query's schedule
#   - an unpaid or expired session crediting anything
#   - the worker's role feeding answers at all (the query has its own);
#     an answer (from anyone holding the query's credentials) about
#     another deposit, session, amount or currency crediting anything: it
#     is refused, with a critical case
#   - a deposit being asked about forever: after the attempts it is left to
#     reconciliation, with a case
#   - the API key on a command line, in a log, or sent over plain HTTP
#     to another machine

use strict;
use warnings;

use JSON::PP;
use POSIX ();
use Test::More;
use Time::HiRes ();

use lib 't/lib';
use Mt5Credit::Provider qw(stripe_event);
use Mt5Credit::Sandbox;
use Mt5Credit::Worker;

my $KEY = 'rk_test_' . join('', map { ('a' .. 'z')[rand 26] } 1 .. 24);

my $sb = Mt5Credit::Sandbox->new;
$sb->start_postgres;
$sb->register_account('alice', 1701, 'USD');

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
$sb->spawn('stripesim', 'perl', "$Mt5Credit::Sandbox::ROOT/t/stripesim/stripesim.pl",
           $port, $state, $KEY);
Mt5Credit::Sandbox::wait_port($port, "stripesim");

my $keyfile = $sb->write_file('stripe-api.key', "$KEY\n");
chmod 0600, $keyfile;
my $conf = Mt5Credit::Worker::config($sb, 'poll', servers => [],
    provider_api_url => "http://127.0.0.1:$port",
    provider_api_key_file => $keyfile,
    query_min_age => 0, query_backoff => 1, query_max_attempts => 3,
    query_timeout => 2);

my $n = 0;
sub deposit {
    my (%o) = @_;
    my $ref = $sb->create_deposit(client => 'alice', login => 1701,
                                  amount => 5000, key => 'query-dep-' . ++$n);
    my $cs = delete $o{id} // "cs_test_query_$n";
    $sb->psql("SELECT mt5credit.deposit_set_session('alice', '$ref', '$cs')",
              user => 'portal');
    $sessions{$cs} = { status => 'complete', payment_status => 'paid',
                       amount_total => 5000, currency => 'usd',
                       client_reference_id => $ref,
                       payment_intent => "pi_query_$n", %o };
    sessions();
    return ($ref, $cs);
}

sub poll {
    my ($rc, $out) = Mt5Credit::Worker::run($sb, 'poll-provider', '-c', $conf,
                                            '--once');
    return $out;
}

sub dep {
    my ($ref) = @_;
    my $r = $sb->psql("SELECT d.status, d.query_attempts, "
        . "(d.query_given_up_at IS NOT NULL), "
        . "(SELECT count(*) FROM mt5credit.mt5_credit c "
        . " WHERE c.deposit_id = d.id) FROM mt5credit.deposit d "
        . "WHERE d.reference = '$ref'");
    return { status => $r->[0][0], attempts => $r->[0][1],
             given_up => $r->[0][2], credits => $r->[0][3] };
}

sub events { $sb->sql1("SELECT count(*) FROM mt5credit.webhook_event") }
sub created {
    $sb->sql1("SELECT count(*) FROM mt5credit.webhook_event "
              . "WHERE disposition = 'credit_created'")
}

sub ingest_webhook {
    my ($body) = @_;
    my $hex = unpack('H*', $body);
    return $sb->sql1("SELECT outcome FROM mt5credit.ingest('stripe', NULL, "
                     . "'\\x$hex'::bytea, 'stripe', " . time . ")",
                     user => 'edge');
}

# --- a lost webhook ---------------------------------------------------------

my ($r1) = deposit();
my $out = poll();
is(dep($r1)->{credits}, 1, 'a paid session whose webhook was lost: one credit');
is(dep($r1)->{status}, 'succeeded', '... and the deposit succeeded');
is($sb->sql1("SELECT signature_scheme || ' ' || disposition FROM "
             . "mt5credit.webhook_event ORDER BY id DESC LIMIT 1"),
   'api credit_created', '... from the answer, stored as an api event');
poll();
is(dep($r1)->{credits}, 1, 'a second round asks nothing more, credits nothing');

# --- the webhook and the query, either first --------------------------------

my ($r2) = deposit();
is(ingest_webhook(stripe_event(deposit => $r2, amount => 5000,
                               pi => 'pi_query_2')), 'credit_created',
   'the webhook comes first');
poll();
is(dep($r2)->{credits}, 1, '... then the query: still one credit');

my ($r3, $cs3) = deposit();
poll();
is(ingest_webhook(stripe_event(deposit => $r3, amount => 5000,
                               pi => 'pi_query_3')), 'stored',
   'the query comes first; the late webhook is stored');
is(dep($r3)->{credits}, 1, '... one credit');
is($sb->sql1("SELECT disposition FROM mt5credit.webhook_event "
             . "ORDER BY id DESC LIMIT 1"), 'already_credited',
   '... the webhook says already credited');

# --- the webhook and the query at the same moment ---------------------------

{
    my $created = created();
    my @d = map { [ deposit() ] } 1 .. 8;
    my $go = Time::HiRes::time() + 1;
    my @kids;
    for my $d (@d) {
        my ($ref, $cs) = @$d;
        my $pid = fork // die "fork: $!";
        if ($pid == 0) {
            Time::HiRes::sleep($go - Time::HiRes::time())
                if $go > Time::HiRes::time();
            ingest_webhook(stripe_event(deposit => $ref, amount => 5000,
                                        pi => $sessions{$cs}{payment_intent}));
            POSIX::_exit(0);
        }
        push @kids, $pid;
    }
    Time::HiRes::sleep($go - Time::HiRes::time()) if $go > Time::HiRes::time();
    poll();
    waitpid $_, 0 for @kids;
    is(join(' ', map { dep($_->[0])->{credits} } @d), join(' ', (1) x 8),
       'eight webhooks racing the query for their payments: one credit each');
    is(created() - $created, 8,
       '... and exactly eight events, of either path, created one');
}

# --- what changes nothing ----------------------------------------------------

for my $fault ([ 'a timeout', delay => 4 ], [ 'HTTP 500', http => 500 ],
               [ 'an answer about another session', other_id => 'cs_other' ])
{
    my ($what, @f) = @$fault;
    my ($r) = deposit(@f);
    my $before = events();
    poll();
    my $d = dep($r);
    is("$d->{status} $d->{credits} $d->{attempts}", 'created 0 1',
       "$what: nothing changes but the attempt count");
    is(events(), $before, "$what: nothing stored");
}

my ($r7, $cs7) = deposit(status => 'open', payment_status => 'unpaid');
poll();
is(dep($r7)->{credits} . ' ' . dep($r7)->{status}, '0 created',
   'an open session: no credit, the deposit stays created');
my ($r8) = deposit(status => 'expired', payment_status => 'unpaid');
poll();
is(dep($r8)->{credits} . ' ' . dep($r8)->{status}, '0 closed',
   'an expired session: no credit, the deposit is closed');
my ($r9) = deposit(payment_status => 'unpaid');
poll();
is(dep($r9)->{credits} . ' ' . dep($r9)->{status}, '0 pending',
   'complete but unpaid (a bank debit in flight): pending, no credit');

# --- a PaymentIntent the portal made directly -------------------------------

my ($rpi) = deposit(id => 'pi_query_direct', status => 'succeeded',
                    amount => 5000, amount_received => 5000);
poll();
is($sb->sql1("SELECT provider_payment_id FROM mt5credit.mt5_credit c JOIN "
             . "mt5credit.deposit d ON d.id = c.deposit_id "
             . "WHERE d.reference = '$rpi'"), 'pi_query_direct',
   'a succeeded PaymentIntent asked by its id: credited under its id');
my ($rpi2) = deposit(id => 'pi_query_waiting',
                     status => 'requires_payment_method');
poll();
is(dep($rpi2)->{credits} . ' ' . dep($rpi2)->{status} . ' '
   . dep($rpi2)->{attempts}, '0 created 1',
   'a PaymentIntent still waiting for its customer: nothing yet');

# --- giving up --------------------------------------------------------------

for (1 .. 3) {
    sleep 2;    # past the backoff
    poll();
}
my $d7 = dep($r7);
is("$d7->{attempts} $d7->{given_up}", '3 t',
   'after 3 attempts the open deposit is given up on');
is($sb->sql1("SELECT count(*) FROM mt5credit.case WHERE kind = "
             . "'deposit_unconfirmed' AND details->>'deposit' = '$r7'"), 1,
   '... left to reconciliation with one case');
my $asked = () = do { open my $l, '<', "$state.log"; grep { /$cs7/ } <$l> };
poll();
my $asked_after = () = do { open my $l, '<', "$state.log"; grep { /$cs7/ } <$l> };
is($asked_after, $asked, '... and not asked about again');

# --- the key stays secret ---------------------------------------------------

$sessions{cs_test_query_1}{status} = 'complete';
my $logs = join '', map { local $/; open my $f, '<', $_ or next; <$f> }
    glob($sb->dir . '/*.out'), glob($sb->dir . '/*.log');
unlike($logs . $out, qr/\Q$KEY\E/, 'the API key is in no log or output');
is(scalar(() = do { open my $l, '<', "$state.log"; grep { / 0$/ } <$l> }), 0,
   'every request carried the key');


# --- an answer about another deposit: refused, and a case (028) -----------------

{
    my ($asked, $cs_asked) = deposit();
    my ($other) = deposit();
    my $asked_id = $sb->sql1("SELECT id FROM mt5credit.deposit "
                             . "WHERE reference = '$asked'");
    my $credits = "SELECT count(*) FROM mt5credit.mt5_credit c JOIN "
                . "mt5credit.deposit d ON d.id = c.deposit_id WHERE "
                . "d.reference IN ('$asked', '$other')";

    # the worker makes deals; it may not say what the provider answered
    like($sb->psql("SELECT mt5credit.query_answered('stripe', $asked_id, "
                   . "'checkout.session.completed', '\\x7b7d')",
                   user => 'worker', may_fail => 1), qr/permission denied/,
         'the worker role cannot call query_answered() at all (031)');

    # the query role's own credentials, and invented bytes naming the other
    my %forged = (
        'another deposit' => { id => $cs_asked, client_reference_id => $other,
                               amount_total => 5000, currency => 'usd' },
        'another session' => { id => 'cs_forged', client_reference_id => $asked,
                               amount_total => 5000, currency => 'usd' },
        'another amount' => { id => $cs_asked, client_reference_id => $asked,
                              amount_total => 777700, currency => 'usd' },
        'another currency' => { id => $cs_asked, client_reference_id => $asked,
                                amount_total => 5000, currency => 'eur' },
        'not JSON' => undef,
    );
    for my $what (sort keys %forged) {
        my $o = $forged{$what};
        my $bytes = defined $o
            ? JSON::PP->new->canonical->encode({ %$o, object => 'checkout.session',
                  status => 'complete', payment_status => 'paid' })
            : 'garbage {';
        (my $lit = $bytes) =~ s/'/''/g;
        is($sb->sql1("SELECT mt5credit.query_answered('stripe', $asked_id, "
                     . "'checkout.session.completed', convert_to('$lit', "
                     . "'UTF8'))", user => 'query'), 'refused',
           "an answer naming $what is refused");
    }
    is($sb->sql1($credits), 0, '... and no credit was made, for either deposit');
    is($sb->sql1("SELECT count(*) || ' ' || min(severity) FROM mt5credit.case "
                 . "WHERE kind = 'query_answer_mismatch' AND deposit_id = "
                 . "$asked_id"), '5 critical',
       '... each a critical case on the deposit asked about');

    my $out = poll();
    like($out, qr/deposit $asked .*credit_created/,
         'the true answer, from the provider, still credits it');
    is($sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit c JOIN "
                 . "mt5credit.deposit d ON d.id = c.deposit_id WHERE "
                 . "d.reference = '$asked'"), 1, '... once');
}

# --- the key never travels in the clear ---------------------------------------

{
    my $plain = Mt5Credit::Worker::config($sb, 'poll-plain', servers => [],
        provider_api_url => 'http://api.example.com',
        provider_api_key_file => $keyfile);
    my ($rc, $o) = Mt5Credit::Worker::run($sb, 'poll-provider', '-c', $plain,
                                          '--once');
    is($rc, 2, 'a plain-HTTP provider URL off this machine is refused');
    like($o, qr/must be https/, '... saying why');
}

done_testing;
