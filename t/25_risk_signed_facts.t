#!/usr/bin/perl
#
# Risk rules on what the provider signed (sql/082, docs/risk.md): the
# payer's name, the card, the provider's own flag.  Impossible:
#   - a payment whose signed payer name is not the client's on file, or
#     whose client has no name on file, reaching MT5 before two people
#     release it
#   - a payment with a card the client was never credited with, or one its
#     provider flagged, reaching MT5 unseen
#   - the same person's name written otherwise (case, accents, order, a
#     middle name left out) holding a deposit
#   - an event without the fact judged as if it had a bad one
#   - a fact from bytes nobody signed deciding anything: no Adyen path can
#     be stored; a signed fact no rule reads kept (a payer's name is
#     personal data)
#   - what the provider signed rewritten afterwards
#   - ingest_batch() judging otherwise than ingest() one by one
#   - anyone but the portal recording a client's name

use strict;
use warnings;

use Test::More;

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
my $sim = $st->sim;

my $db = 'host=127.0.0.1 port=' . $sb->pg_port . ' dbname=mt5credit';

sub desk {
    my ($who, @args) = @_;
    return Mt5Credit::Worker::run($sb, 'cases', '--database',
                                  "$db user=$who", @args);
}

# a rule in force (or, $remove, gone): proposed by alice, approved by bob
sub rule {
    my ($rule, $remove) = @_;
    my $id = $sb->sql1("SELECT mt5credit.risk_rule_propose('$rule', NULL, "
        . 'NULL, NULL, ' . ($remove ? 'true' : 'false') . ", 'test')",
        user => 'ops_alice');
    $sb->sql1("SELECT mt5credit.risk_rule_decide($id, 'approve', 'ok')",
              user => 'ops_bob');
}

sub held_for {
    my ($credit) = @_;
    return $sb->sql1("SELECT coalesce(string_agg(r->>'rule', ',' "
                     . "ORDER BY r->>'rule'), '') FROM mt5credit.mt5_credit, "
                     . "jsonb_array_elements(held_for) r WHERE id = $credit")
           // '';
}

sub trip {
    my ($credit, $rule, $field) = @_;
    return $sb->sql1("SELECT coalesce(r->>'$field', '(null)') FROM "
                     . "mt5credit.mt5_credit, jsonb_array_elements(held_for) r "
                     . "WHERE id = $credit AND r->>'rule' = '$rule'");
}

sub fact {
    my ($credit, $col) = @_;
    return $sb->sql1("SELECT coalesce($col, '(none)') FROM "
                     . "mt5credit.mt5_credit WHERE id = $credit");
}

sub name_of {
    my ($client, $name) = @_;
    (my $q = $name) =~ s/'/''/g;
    return $sb->psql("SELECT mt5credit.client_name_set('$client', '$q')",
                     user => 'portal', may_fail => 1, raw => 1);
}

my $login = 70900;
my %login_of;
sub client {
    my ($name) = @_;
    return $login_of{$name} //= $st->account(login => ++$login,
                                             client => $name);
}

# a payment intent through nginx, signing what %o names of its payer
sub pay {
    my ($client, %o) = @_;
    return $st->pay(client => $client, login => client($client),
                    amount => $o{amount} // 1000,
                    type => $o{type} || 'payment_intent.succeeded', %o);
}

my (@held, @clear);
sub expect {
    my ($credit, $rules, $what) = @_;
    if ($rules eq '') { push @clear, [ $credit, $what ] }
    else              { push @held, [ $credit, $rules, $what ] }
    is($st->status_of($credit) . ' ' . held_for($credit),
       ($rules eq '' ? 'pending ' : "held $rules"),
       $what . ($rules eq '' ? ': not held' : ": held under $rules"));
}

# --- the client's name: the portal's ----------------------------------------

unlike(name_of('ann', 'Ann Marie Smith'), qr/ERROR/,
       'the portal records a client\'s name');
name_of('jose', 'José García López');
name_of('bo', 'Bo Li');
like(name_of('ann', '  -- '), qr/a name needs letters/,
     'a name without letters is refused');
like($sb->psql("SELECT mt5credit.client_name_set('ann', 'Eve Mallory')",
               user => 'edge', may_fail => 1, raw => 1),
     qr/permission denied/, 'the edge cannot record a client\'s name');
like($sb->psql("UPDATE mt5credit.client_name SET name = 'Eve' ",
               user => 'ops_alice', may_fail => 1, raw => 1),
     qr/permission denied/, '... nor a person at the table');
is($sb->sql1("SELECT name FROM mt5credit.client_name "
             . "WHERE client_id = 'ann'"), 'Ann Marie Smith',
   'ann\'s name is still the one the portal recorded');

# --- no rule: nothing read, nothing kept ------------------------------------

my $bare = pay('ann', payer => 'Ann Smith', card => 'fp_ann_1',
               risk_level => 'highest');
is(fact($bare, 'payer_name') . ' ' . fact($bare, 'instrument') . ' '
   . fact($bare, 'provider_signal'), '(none) (none) (none)',
   'with no rule that reads them, the payer\'s name, card and flag are '
   . 'not kept');
is($st->status_of($bare), 'pending', '... and nothing is held');

# --- payer_name ---------------------------------------------------------------

rule('payer_name');
expect(pay('ann', payer => 'ANN SMITH'), '',
       'Ann Marie Smith paying as "ANN SMITH" (a middle name left out)');
expect(pay('ann', payer => 'Smith, Ann-Marie'), '',
       '... as "Smith, Ann-Marie" (order, punctuation)');
expect(pay('jose', payer => 'Jose Garcia'), '',
       'José García López paying as "Jose Garcia" (accents)');
expect(pay('jose', payer => "JOS\x{c9} GARC\x{cd}A L\x{d3}PEZ"), '',
       '... as "JOSÉ GARCÍA LÓPEZ"');
expect(pay('bo', payer => 'Li Bo'), '', 'Bo Li paying as "Li Bo"');
my $john = pay('ann', payer => 'John Smith');
expect($john, 'payer_name', 'Ann Marie Smith paying as "John Smith"');
is(trip($john, 'payer_name', 'payer_name') . ' / '
   . trip($john, 'payer_name', 'client_name'),
   'John Smith / Ann Marie Smith',
   'the evidence: the signed payer name and the name on file');
is(fact($john, 'payer_name'), 'John Smith',
   '... and the credit keeps the name it was judged on');
expect(pay('ann', payer => 'Smith'), 'payer_name',
       '... paying as "Smith" alone (one word is anybody\'s)');
expect(pay('bo', payer => 'Bo Lee'), 'payer_name', 'Bo Li paying as "Bo Lee"');
expect(pay('ann', payer => "\x{410}\x{43d}\x{43d}\x{430} \x{421}\x{43c}\x{438}\x{442}"),
       'payer_name', 'Ann Marie Smith paying in another script (no '
       . 'transliteration: a person reads it)');
my $nobody = pay('noname', payer => 'Any Body');
expect($nobody, 'payer_name', 'a client with no name on file');
is(trip($nobody, 'payer_name', 'client_name'), '(null)',
   '... the evidence says there was none');
expect(pay('ann', type => 'checkout.session.completed', payer => 'Eve Mallory'),
       'payer_name', 'a Checkout Session\'s customer_details.name');
my $unsaid = pay('ann');
expect($unsaid, '', 'an event that signs no payer name (not judged)');
is(fact($unsaid, 'payer_name'), '(none)', '... and none is made up');
rule('payer_name', 1);

# --- first_instrument ---------------------------------------------------------

rule('first_instrument');
my $new_card = pay('bo', card => 'fp_bo_1');
expect($new_card, 'first_instrument', 'Bo\'s first card');
is(trip($new_card, 'first_instrument', 'instrument'), 'fp_bo_1',
   'the evidence: the card\'s fingerprint');
expect(pay('bo', card => 'fp_bo_1'), 'first_instrument',
       '... again while the first waits (nothing credited with it yet)');

# two people release the first: the worker makes it, and only it
my $conf = $st->worker_config('w1');
$sim->reset_stats;
Mt5Credit::Worker::run($sb, 'work', '-c', $conf, '--once');
is(scalar @{ $st->deals_of($new_card) }, 0,
   'no MT5 deal for the held card before anyone decides');
my $case = $sb->sql1("SELECT id FROM mt5credit.case WHERE credit_id = "
                     . "$new_card AND kind = 'risk_hold'");
my ($rc, $out) = desk('ops_alice', 'propose', $case, '--action',
                      'release_hold', '--note', 'the client\'s own card');
my ($p) = $out =~ /proposal (\d+) made/;
($rc, $out) = desk('ops_alice', 'approve', $p);
isnt($rc, 0, 'alice cannot approve her own release');
is($st->status_of($new_card), 'held', '... still held');
($rc, $out) = desk('ops_bob', 'approve', $p, '--note', 'checked');
is($rc, 0, 'bob approves it') or diag $out;
Mt5Credit::Worker::run($sb, 'work', '-c', $conf, '--once');
is($st->status_of($new_card), 'done', 'the worker makes the released credit');
is(scalar @{ $st->deals_of($new_card) }, 1, '... one deal');

expect(pay('bo', card => 'fp_bo_1'), '',
       'Bo\'s card once a deposit was credited with it');
expect(pay('bo', card => 'fp_bo_2'), 'first_instrument', 'Bo\'s second card');
expect(pay('ann', card => 'fp_bo_1'), 'first_instrument',
       'Bo\'s card paying for Ann (her first with it)');
expect(pay('bo', type => 'checkout.session.completed'), '',
       'a payment that signs no card (not judged)');
rule('first_instrument', 1);

# --- provider_signal ----------------------------------------------------------

rule('provider_signal');
expect(pay('ann', risk_level => 'normal'), '', 'Radar\'s risk_level normal');
my $elev = pay('ann', risk_level => 'elevated');
expect($elev, 'provider_signal', 'Radar\'s risk_level elevated');
is(trip($elev, 'provider_signal', 'signal'), 'elevated',
   'the evidence: the provider\'s own word');
expect(pay('jose', risk_level => 'highest'), 'provider_signal',
       'Radar\'s risk_level highest');
rule('provider_signal', 1);

# --- nothing held reaches MT5 -------------------------------------------------

$sim->reset_stats;
Mt5Credit::Worker::run($sb, 'work', '-c', $conf, '--once') for 1 .. 2;
my @still = grep { $_->[0] != $new_card } @held;
is(scalar(grep { @{ $st->deals_of($_->[0]) } } @still), 0,
   'MT5 has no deal for any held credit');
is(scalar(grep { $st->status_of($_->[0]) eq 'held' } @still), scalar @still,
   scalar(@still) . ' held credits are all still held');
is(scalar(grep { $st->status_of($_->[0]) eq 'done' } @clear), scalar @clear,
   'every credit not held is made');
cmp_ok($sim->requests('/api/trade/balance') // 0, '<=', scalar @clear + 1,
       '... with no balance call for a held one');

# --- what was signed stays as it was ------------------------------------------

like($sb->psql("UPDATE mt5credit.mt5_credit SET payer_name = 'Ann Marie "
               . "Smith' WHERE id = $john", may_fail => 1, raw => 1),
     qr/what the provider signed of it never changes/,
     'a signed payer name is never rewritten, not even by the owner');
like($sb->psql("INSERT INTO mt5credit.payload_risk (payload, event_type, "
               . "payer_name) VALUES ('adyen', 'AUTHORISATION', "
               . "'strict \$.additionalData.cardHolderName')",
               may_fail => 1, raw => 1),
     qr/payload_risk_payload_check/,
     'Adyen\'s unsigned additionalData cannot become a fact');
like($sb->psql("INSERT INTO mt5credit.payload_risk (payload, event_type, "
               . "payer_name) VALUES ('generic', 'payment.other', "
               . "'lax \$.data.payer_name')", may_fail => 1, raw => 1),
     qr/payload_risk_payer_name_check/,
     'a lax path (one fact read out of several objects) cannot be stored');

# --- ingest_batch() judges as ingest() ----------------------------------------

$sb->psql("INSERT INTO mt5credit.provider_payload VALUES "
          . "('checkout', 'checkout')");
rule($_) for qw(payer_name first_instrument provider_signal);

sub bytea { return "'\\x" . unpack('H*', $_[0]) . "'::bytea" }

# the same events, one by one (ingest()) and in one batch; each client
# once in each
my @cases = (
    [ 'checkout', 'Ann Marie Smith', 'fp_x', 'false',
      'first_instrument' ],
    [ 'checkout', 'Eve Mallory', 'fp_y', 'true',
      'first_instrument,payer_name,provider_signal' ],
    [ 'acmepay', 'Smith Ann', undef, 'low', '' ],
    [ 'acmepay', 'Eve', 'card_9', 'high',
      'first_instrument,payer_name,provider_signal' ],
);
my $seq = 0;
for my $way (qw(one batch)) {
    my (@p, @ids, @bodies, @schemes, @want);
    for my $c (@cases) {
        my ($prov, $payer, $card, $flag, $rules) = @$c;
        my $who = "b_${way}_" . ++$seq;
        name_of($who, 'Ann Marie Smith');
        my $l = client($who);
        my $ref = $sb->create_deposit(client => $who, login => $l,
                                      amount => 2500, currency => 'USD',
                                      provider => $prov);
        my $body;
        if ($prov eq 'checkout') {
            $body = qq({"id":"evt_cko_$seq","type":"payment_captured",)
                . qq("data":{"id":"pay_cko_$seq","reference":"$ref",)
                . qq("amount":2500,"currency":"USD",)
                . qq("source":{"name":"$payer","fingerprint":"$card"},)
                . qq("risk":{"flagged":$flag}}});
        } else {
            $body = qq({"type":"payment.succeeded","data":{)
                . qq("payment_id":"acme_$seq","deposit_reference":"$ref",)
                . qq("amount_minor":2500,"currency":"USD",)
                . qq("payer_name":"$payer",)
                . (defined $card ? qq("instrument":"$card",) : '')
                . qq("risk":"$flag"}});
        }
        push @p, "'$prov'";
        push @ids, $prov eq 'checkout' ? 'NULL' : "'msg_acme_$seq'";
        push @bodies, bytea($body);
        push @schemes, $prov eq 'checkout' ? "'hmac-sha256'" : "'standard'";
        push @want, $rules;
    }
    my @credits;
    if ($way eq 'one') {
        for my $i (0 .. $#p) {
            push @credits, $sb->sql1("SELECT credit_id FROM mt5credit.ingest("
                . "$p[$i], $ids[$i], $bodies[$i], $schemes[$i], "
                . "extract(epoch FROM now())::bigint, NULL)", user => 'edge');
        }
    } else {
        my $rows = $sb->psql("SELECT credit_id, detail FROM "
            . "mt5credit.ingest_batch(ARRAY[" . join(',', @p) . "], "
            . "ARRAY[" . join(',', @ids) . "]::text[], "
            . "ARRAY[" . join(',', @bodies) . "], "
            . "ARRAY[" . join(',', @schemes) . "], "
            . "ARRAY[" . join(',', ('extract(epoch FROM now())::bigint')
                                   x @p) . "], "
            . "ARRAY[" . join(',', ('NULL') x @p) . "]::text[]) ORDER BY ord",
            user => 'edge');
        @credits = map { $_->[0] } @$rows;
    }
    for my $i (0 .. $#cases) {
        my $c = $cases[$i];
        is(held_for($credits[$i] // 0), $want[$i],
           "$way: $c->[0] paid by \"$c->[1]\", card "
           . ($c->[2] // 'none') . ", flag $c->[3]: "
           . ($want[$i] || 'not held'));
    }
}
is($sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit c JOIN "
             . "mt5credit.deposit d ON d.id = c.deposit_id WHERE "
             . "d.client_id LIKE 'b\\_%' AND c.payer_name IS NOT NULL"), 8,
   'both ways keep the signed payer name of every credit they judged');

cmp_ok(scalar @held, '>=', 12, scalar(@held) . ' planted holds through nginx');

done_testing;
