#!/usr/bin/perl
#
# The module's nginx variables, in an access_log line with escape=json:
# $mt5_credit_outcome, $mt5_credit_reason, $mt5_credit_event and
# $mt5_credit_credit, beside nginx's own $request_id.  Impossible:
#   - a delivery's log line not saying what became of it: the credit it
#     made, the duplicate, the rejection with its reason, the signed body
#     that is not an event, the 503 with its cause
#   - an access log line that names the wrong event or credit (they are
#     the ones in the database and in the answer)
#   - a request the module did not handle carrying its values
#   - the answers not counted by status code (mt5credit_responses_total),
#     or the committed ones missing from the ingest histogram
#   - a log line that leads to no event: the $request_id is stored with
#     the event, a conflicting body and a malformed one (sql/051), found
#     by `events list --request-id`, shown by `events show`, immutable;
#     an older edge's five-argument ingest() still stores, and an id of
#     another shape never refuses an event

use strict;
use warnings;

use JSON::PP;
use Test::More;

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Provider qw(stripe_event stripe_headers);

my $json = JSON::PP->new;
my $format = join '', '{"status":"$status",',
    '"outcome":"$mt5_credit_outcome","reason":"$mt5_credit_reason",',
    '"event":"$mt5_credit_event","credit":"$mt5_credit_credit",',
    '"request_id":"$request_id"}';
my $st = Mt5Credit::Stack->new(
    nginx_http => "log_format mc_json escape=json '$format';",
    locations => 'access_log %%DIR%%/access.json mc_json;
        location = /webhooks/bank {
            mt5_credit_webhook bank;
            mt5_credit_signature stripe;
            mt5_credit_secret_file %%DIR%%/stripe.secret;
        }');
my $sb = $st->sb;
my $log = $sb->dir . '/access.json';
$st->account(login => 70801);

# nginx writes the line after the answer is sent: wait for it.  With an
# outcome named, wait for the newest line of that outcome: lines of earlier
# requests (a flood) may still be arriving when the next answer is read.
my $seen = 0;
sub last_line {
    my ($outcome) = @_;
    for (1 .. 50) {
        if (open my $f, '<', $log) {
            my @lines = <$f>;
            my @new = map { $json->decode($_) } @lines[$seen .. $#lines];
            @new = grep { $_->{outcome} eq $outcome } @new if defined $outcome;
            if (@new) {
                $seen = @lines;
                return $new[-1];
            }
        }
        select undef, undef, undef, 0.1;
    }
    return {};
}

# a paid deposit: credit_created, naming the event and the credit
my $dep = $sb->create_deposit(client => 'alice', login => 70801,
                              amount => 5000);
my $body = stripe_event(deposit => $dep, amount => 5000, pi => 'pi_vars_1');
my $res = $st->webhook($body);
is($res->{status}, 200, 'a payment webhook');
my $answer = $json->decode($res->{body});
my $l = last_line();
is($l->{outcome}, 'credit_created', '$mt5_credit_outcome: credit_created');
is($l->{credit}, $answer->{credit}, '$mt5_credit_credit: the credit made ('
   . "$answer->{credit})");
is($l->{event}, $answer->{event}, '$mt5_credit_event: the stored event');
is($sb->sql1("SELECT credit_id FROM mt5credit.webhook_event WHERE id = "
             . "$l->{event}"), $l->{credit}, '... which names that credit');
is($l->{reason}, '', '$mt5_credit_reason: empty');
like($l->{request_id}, qr/^[0-9a-f]{32}$/, '$request_id beside them');

# --- the request id stored with what was stored (sql/051) -----------------------

my $rid = $l->{request_id};
my $event = $l->{event};
my $db = 'host=127.0.0.1 port=' . $sb->pg_port . ' dbname=mt5credit';
is($sb->sql1("SELECT request_id FROM mt5credit.webhook_event WHERE id = $event"),
   $rid, 'the access log\'s $request_id is stored with the event');
my ($erc, $eout) = Mt5Credit::Worker::run($sb, 'events', '--database',
    "$db user=ops_alice", 'list', '--request-id', $rid);
is($erc, 0, 'mt5credit events list --request-id');
like($eout, qr/^$event\s+stripe\s/m, '... finds that event');
like($eout, qr/^\(1 event\)$/m, '... and only it');
($erc, $eout) = Mt5Credit::Worker::run($sb, 'events', '--database',
    "$db user=ops_alice", 'show', $event);
like($eout, qr/"request_id": "$rid"/, 'events show prints it');

$res = $st->webhook($body);
$l = last_line();
is($l->{outcome}, 'duplicate', 'the same delivery again: duplicate');
is($l->{credit}, $answer->{credit}, '... naming the same credit');
isnt($l->{request_id}, $rid, '... under a request id of its own');
is($sb->sql1("SELECT request_id FROM mt5credit.webhook_event WHERE id = $event"),
   $rid, '... the event keeps the first delivery\'s');

# refused before anything is stored
$res = $sb->http('POST', '/webhooks/stripe', body => $body,
                 headers => stripe_headers('whsec_wrong', $body));
is($res->{status}, 400, 'a wrong signature: 400');
$l = last_line();
is("$l->{outcome} $l->{reason}", 'rejected bad_signature',
   '... logged rejected, bad_signature');
is("$l->{event}$l->{credit}", '', '... with no event or credit');

# signed, but not an event
my $junk = 'not json at all';
$res = $sb->http('POST', '/webhooks/stripe', body => $junk,
                 headers => stripe_headers($Mt5Credit::Stack::SECRET, $junk));
is($res->{status}, 400, 'a signed body that is not an event: 400');
$l = last_line();
is($l->{outcome}, 'malformed', '... logged malformed');
is($sb->sql1("SELECT first_request_id || ' ' || last_request_id FROM "
             . "mt5credit.webhook_malformed"), "$l->{request_id} $l->{request_id}",
   '... kept with its request id');
my $first = $l->{request_id};

# a request of another location
$sb->http('GET', '/status');
$l = last_line();
is("$l->{status} $l->{outcome}$l->{credit}", '200 ',
   'the status page: none of the module\'s values');

# the database away: 503, and why
$sb->stop_postgres('fast');
my $dep2 = 'dep_999999';
$res = $st->webhook(stripe_event(deposit => $dep2, amount => 100,
                                 pi => 'pi_vars_2'));
is($res->{status}, 503, 'PostgreSQL away: 503');
$l = last_line();
is($l->{outcome}, 'unavailable', '... logged unavailable');
like($l->{reason}, qr/^(?:unavailable|error|timeout)$/,
     "... with the cause ($l->{reason})");
$sb->start_postgres;

# --- the same deliveries in the status page's counters ------------------------

# another provider's location: its counters are its own
my $bankb = stripe_event(deposit => $dep, amount => 1, pi => 'pi_vars_bank');
$res = $sb->http('POST', '/webhooks/bank', body => $bankb,
                 headers => stripe_headers('whsec_wrong_bank', $bankb));
is($res->{status}, 400, 'a forged delivery to the bank location: 400');

my $status = $sb->http('GET', '/status')->{body};
sub sample { $status =~ /^\Q$_[0]\E ([\d.]+)$/m ? $1 : undef }
is(sample('mt5credit_responses_total{provider="stripe",code="200"}'), 2,
   'mt5credit_responses_total{provider="stripe",code="200"}: the payment '
   . 'and its duplicate');
is(sample('mt5credit_responses_total{provider="stripe",code="400"}'), 2,
   '... code="400": the wrong signature and the body that is not an event');
is(sample('mt5credit_responses_total{provider="stripe",code="503"}'), 1,
   '... code="503": one');
unlike($status, qr/_503_total/, 'no status code in a metric name');
is(sample('mt5credit_webhooks_rejected_total{provider="bank",reason="bad_signature"}'),
   1, 'the provider is a label: bank\'s refusal counted as bank\'s');
is(sample('mt5credit_webhooks_rejected_total{provider="stripe",reason="bad_signature"}'),
   1, '... and stripe\'s as stripe\'s');
is(sample('mt5credit_webhooks_received_total{provider="bank"}'), 1,
   '... each received counted under its provider');
like($status, qr/^mt5credit_pg_connections \d+$/m,
     'the pool\'s gauges belong to no provider');
like($status, qr/^# TYPE mt5credit_ingest_duration_seconds histogram$/m,
     'mt5credit_ingest_duration_seconds is a histogram');
my @le = $status =~ /^mt5credit_ingest_duration_seconds_bucket\{provider="stripe",le="[^"]+"\} (\d+)$/mg;
is(scalar @le, 12, '... of 12 buckets');
is_deeply([ @le ], [ sort { $a <=> $b } @le ], '... cumulative');
is($le[-1], 2, '... +Inf: the two committed deliveries');
is(sample('mt5credit_ingest_duration_seconds_count{provider="stripe"}'), 2,
   '... as _count');
cmp_ok(sample('mt5credit_ingest_duration_seconds_sum{provider="stripe"}'), '>', 0,
       '... and a _sum in seconds');

# --- the record of refused deliveries (?refused) --------------------------------

my $refused = $json->decode($sb->http('GET', '/status?refused')->{body});
is(ref $refused, 'ARRAY', 'GET /status?refused: a JSON array');
is_deeply([ map { $_->{reason} } @$refused ],
          [ 'bad_signature', 'malformed_body', 'bad_signature' ],
          '... the refusals, newest first');
is_deeply([ map { "$_->{provider} $_->{from}" } @$refused ],
          [ 'bank 127.0.0.1', 'stripe 127.0.0.1', 'stripe 127.0.0.1' ],
          '... each with its provider and peer');
is($refused->[1]{bytes}, length $junk, '... and its size');
like($refused->[0]{time}, qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/, '... and time');
my $text = $sb->http('GET', '/status?refused')->{body};
unlike($text, qr/v1=|whsec_|not json|pi_vars/,
       '... never a signature, a secret or a byte of the body');

# a flood is sampled: the ring stays readable
my $forged = stripe_event(deposit => $dep, amount => 1, pi => 'pi_vars_flood');
$sb->http('POST', '/webhooks/stripe', body => $forged,
          headers => stripe_headers('whsec_flood', $forged)) for 1 .. 30;
$refused = $json->decode($sb->http('GET', '/status?refused')->{body});
my $flood = grep { $_->{reason} eq 'bad_signature' } @$refused;
cmp_ok($flood - 1, '<=', 20, "30 forged deliveries in a moment: $flood "
       . 'recorded, at most 10 a second');
cmp_ok($flood - 1, '>=', 1, '... but recorded');

# --- request ids of later deliveries (after the counters above) ----------------

# other bytes under the same event id: the conflict row has its request
(my $other = $body) =~ s/"amount_total": 5000/"amount_total": 5001/;
isnt($other, $body, '(a body changed under the same event id)');
$res = $st->webhook($other);
$l = last_line('conflict');
is($sb->sql1("SELECT request_id FROM mt5credit.webhook_event_conflict "
             . "WHERE event_id = $event"), $l->{request_id},
   'a conflicting body: stored with its own request id');
($erc, $eout) = Mt5Credit::Worker::run($sb, 'events', '--database',
    "$db user=ops_alice", 'list', '--request-id', $l->{request_id});
like($eout, qr/^$event\s+stripe\s/m, '... and that id finds the event it conflicts with');

# evidence: the id never changes afterwards, whoever asks
like($sb->psql("UPDATE mt5credit.webhook_event SET request_id = "
               . "'00000000000000000000000000000000' WHERE id = $event",
               may_fail => 1),
     qr/is evidence: its content is immutable/,
     'the stored request id cannot be rewritten');

# an edge built before 051 calls the five-argument ingest(): still stored
my $dep5 = $sb->create_deposit(client => 'alice', login => 70801,
                               amount => 5000);
my $old = stripe_event(deposit => $dep5, amount => 5000, pi => 'pi_vars_old');
my $out5 = $sb->psql("SET ROLE mt5credit_ingest; SELECT outcome, "
    . "event_row_id FROM mt5credit.ingest('stripe', NULL, "
    . "convert_to(\$b\$$old\$b\$, 'UTF8'), 'stripe', NULL)");
is($out5->[-1][0], 'credit_created',
   'the five-argument ingest() of an older edge still stores (and credits)');
is($sb->sql1("SELECT coalesce(request_id, 'none') FROM mt5credit.webhook_event "
             . "WHERE id = $out5->[-1][1]"), 'none', '... with no request id');
my $bad = $sb->psql("SET ROLE mt5credit_ingest; SELECT outcome FROM "
    . "mt5credit.ingest('stripe', NULL, convert_to(\$b\$"
    . stripe_event(deposit => $sb->create_deposit(client => 'alice',
                       login => 70801, amount => 700), amount => 700,
                   pi => 'pi_vars_badrid')
    . "\$b\$, 'UTF8'), 'stripe', NULL, 'not-an-id')");
is($bad->[-1][0], 'credit_created', 'a request id not of nginx\'s shape never refuses an event');
is($sb->sql1("SELECT coalesce(request_id, 'none') FROM mt5credit.webhook_event "
             . "WHERE position('pi_vars_badrid'::bytea IN raw_body) > 0"), 'none',
   '... and is stored as none');


$sb->http('POST', '/webhooks/stripe', body => $junk,
          headers => stripe_headers($Mt5Credit::Stack::SECRET, $junk));
$l = last_line('malformed');
is($sb->sql1("SELECT first_request_id || ' ' || last_request_id FROM "
             . "mt5credit.webhook_malformed"), "$first $l->{request_id}",
   'a malformed body again: the first delivery\'s id kept, the latest beside it');

done_testing;
