package Mt5Credit::Provider;

# A payment provider simulator for tests and the demo: builds provider
# events the way Stripe, a Standard Webhooks PSP, Coinbase Commerce and
# Adyen send them, and signs them as each does (Adyen: each item over
# its fields; the others over their exact bytes).

use strict;
use warnings;

use Digest::SHA qw(hmac_sha256_hex hmac_sha256_base64);
use JSON::PP;
use MIME::Base64 qw(decode_base64);
use Exporter 'import';

our @EXPORT_OK = qw(stripe_sign standard_sign hmac_hex stripe_event
                    standard_event stripe_headers standard_headers
                    coinbase_event adyen_item adyen_batch);

my $seq = 0;

sub uniq { return sprintf('%d%05d%04d', time, $$ % 100000, ++$seq) }

# Stripe-Signature over "<t>.<body>", key = the secret string itself.
sub stripe_sign {
    my ($secret, $body, $t) = @_;
    $t //= time;
    return "t=$t,v1=" . hmac_sha256_hex("$t.$body", $secret);
}

sub stripe_headers {
    my ($secret, $body, $t) = @_;
    return [ [ 'Stripe-Signature', stripe_sign($secret, $body, $t) ],
             [ 'Content-Type', 'application/json' ] ];
}

# Standard Webhooks over "<id>.<ts>.<body>", key = base64 after "whsec_".
sub standard_sign {
    my ($secret, $id, $body, $ts) = @_;
    $ts //= time;
    (my $b64 = $secret) =~ s/^whsec_//;
    my $sig = hmac_sha256_base64("$id.$ts.$body", decode_base64($b64));
    $sig .= '=' while length($sig) % 4;
    return "v1,$sig";
}

sub standard_headers {
    my ($secret, $id, $body, $ts) = @_;
    $ts //= time;
    return [ [ 'webhook-id', $id ], [ 'webhook-timestamp', $ts ],
             [ 'webhook-signature', standard_sign($secret, $id, $body, $ts) ],
             [ 'Content-Type', 'application/json' ] ];
}

sub hmac_hex { return hmac_sha256_hex($_[1], $_[0]) }

# A Stripe event body.  %o: type, deposit (reference), amount, currency,
# pi (PaymentIntent id), charge, dispute, status, payment_status, id;
# for charge.refunded also charge_amount and refunds (a list of
# [refund id, amount, status (default succeeded), metadata], listed as the
# charge's refunds.data the way older API versions send it; absent: no
# list); for refund.* the refund, {id, status, metadata, failure_reason}.
sub stripe_event {
    my (%o) = @_;
    my $type = $o{type} || 'checkout.session.completed';
    my $id = $o{id} || 'evt_' . uniq();
    my $pi = $o{pi} || 'pi_' . uniq();
    my $cur = lc($o{currency} || 'usd');
    my $amount = $o{amount} // 50000;
    my $dep = $o{deposit} // 'dep_000001';
    my $object;

    if ($type =~ /^checkout\.session\./) {
        my $ps = $o{payment_status} || 'paid';
        $object = qq({"id": "cs_test_$id", "object": "checkout.session", )
            . qq("amount_total": $amount, "client_reference_id": "$dep", )
            . qq("currency": "$cur", "metadata": {"deposit_id": "$dep"}, )
            . qq("mode": "payment", "payment_intent": "$pi", )
            . (defined $o{payer}
               ? '"customer_details": {"name": ' . json_str($o{payer}) . '}, '
               : '')
            . qq("payment_status": "$ps", "status": "complete"});
    } elsif ($type eq 'payment_intent.succeeded') {
        my $meta = defined $o{deposit} ? qq({"deposit_id": "$dep"}) : '{}';
        $object = qq({"id": "$pi", "object": "payment_intent", )
            . qq("amount": $amount, "amount_received": $amount, )
            . stripe_charges($pi, $amount, $cur, %o)
            . qq("currency": "$cur", "metadata": $meta, )
            . qq("status": "succeeded"});
    } elsif ($type eq 'charge.refunded') {
        my $ch = $o{charge} || 'ch_' . uniq();
        my $list = '';
        if ($o{refunds}) {
            $list = qq(, "refunds": {"object": "list", "data": [)
                . join(', ', map {
                      qq({"id": "$_->[0]", "object": "refund", )
                    . qq("amount": $_->[1], "charge": "$ch", )
                    . qq("currency": "$cur", "payment_intent": "$pi", )
                    . ($_->[3] ? '"metadata": ' . meta_json($_->[3]) . ', '
                               : '')
                    . qq("status": ") . ($_->[2] || 'succeeded') . '"}'
                  } @{ $o{refunds} })
                . qq(], "has_more": false});
        }
        $object = qq({"id": "$ch", "object": "charge", "amount": )
            . ($o{charge_amount} // $amount)
            . qq(, "amount_refunded": $amount, "currency": "$cur", )
            . qq("payment_intent": "$pi", "refunded": true, )
            . qq("status": "succeeded"$list});
    } elsif ($type =~ /^refund\./) {
        # refund.created, refund.updated, refund.failed: the refund itself
        my $r = $o{refund} || {};
        my $fr = $r->{failure_reason} ? qq("$r->{failure_reason}") : 'null';
        $object = qq({"id": "$r->{id}", "object": "refund", )
            . qq("amount": $amount, "charge": "ch_of_$pi", )
            . qq("currency": "$cur", "failure_reason": $fr, )
            . '"metadata": ' . meta_json($r->{metadata} || {}) . ', '
            . qq("payment_intent": "$pi", )
            . qq("status": ") . ($r->{status} || 'succeeded') . '"}';
    } elsif ($type =~ /^charge\.dispute\./) {
        my $du = $o{dispute} || 'du_' . uniq();
        my $st = $o{status} || 'lost';
        $object = qq({"id": "$du", "object": "dispute", "amount": $amount, )
            . qq("charge": "ch_x", "currency": "$cur", )
            . qq("payment_intent": "$pi", "reason": "fraudulent", )
            . qq("status": "$st"});
    } else {
        $object = qq({"id": "obj_$id", "object": "unknown"});
    }

    return qq({\n  "id": "$id",\n  "object": "event",\n)
         . qq(  "api_version": "2025-03-31.basil",\n  "created": ) . time
         . qq(,\n  "data": {\n    "object": $object\n  },\n)
         . qq(  "livemode": false,\n  "type": "$type"\n}\n);
}

# A string as JSON (\u escapes: a name's accents travel as Stripe's do)
sub json_str { return JSON::PP->new->ascii->allow_nonref->encode($_[0]) }

# A PaymentIntent's charge, as API versions before 2022-11-15 embed it:
# the payer's name, the card's fingerprint, Radar's risk level (payer,
# card, risk_level; none of them: no charges list)
sub stripe_charges {
    my ($pi, $amount, $cur, %o) = @_;
    return '' unless grep { defined $o{$_} } qw(payer card risk_level);
    my @ch = (qq("id": "ch_of_$pi"), qq("object": "charge"),
              qq("amount": $amount), qq("currency": "$cur"));
    push @ch, '"billing_details": {"name": ' . json_str($o{payer}) . '}'
        if defined $o{payer};
    push @ch, '"payment_method_details": {"type": "card", "card": '
              . '{"brand": "visa", "last4": "4242", "fingerprint": '
              . json_str($o{card}) . '}}' if defined $o{card};
    push @ch, '"outcome": {"network_status": "approved_by_network", '
              . '"risk_level": ' . json_str($o{risk_level}) . ', '
              . '"type": "authorized"}' if defined $o{risk_level};
    return '"charges": {"object": "list", "data": [{' . join(', ', @ch)
           . '}], "has_more": false}, ';
}

# a refund's metadata, as Stripe writes it (string values, sorted here)
sub meta_json {
    my ($m) = @_;
    return '{' . join(', ', map { qq("$_": "$m->{$_}") } sort keys %$m) . '}';
}

# The generic payload (docs/providers.md) for Standard Webhooks PSPs.
sub standard_event {
    my (%o) = @_;
    my $type = $o{type} || 'payment.succeeded';
    my $amount = $o{amount} // 50000;
    my $cur = $o{currency} || 'USD';
    my $extra = '';
    $extra .= qq(, "deposit_reference": "$o{deposit}") if defined $o{deposit};
    $extra .= qq(, "refund_id": "$o{refund}") if defined $o{refund};
    $extra .= qq(, "chargeback_id": "$o{chargeback}") if defined $o{chargeback};
    return qq({"type": "$type", "data": {"payment_id": "$o{payment}", )
         . qq("amount_minor": $amount, "currency": "$cur"$extra}});
}

# A Coinbase Commerce delivery (docs/providers.md "Coinbase Commerce"),
# laid out as its published vector is: the envelope (its own numeric id,
# attempt_number), the event under "event", a charge with its local
# price, payments and timeline.
#   charge => id, deposit => our reference, price => "250.00",
#   currency => 'USD', payments => [ [n, "250.00", status, currency] ],
#   timeline => [ [status, context] ], attempt => n, event_id => id
my $coinbase_json = JSON::PP->new->canonical;
my $coinbase_seq = 0;

sub coinbase_event {
    my ($type, %c) = @_;
    my $local = { amount => $c{price}, currency => $c{currency} // 'USD' };
    my @payments = map {
        { network => 'ethereum', transaction_id => "0xtx$_->[0]",
          status => $_->[2] // 'CONFIRMED',
          value => { local => { amount => $_->[1],
                                currency => $_->[3] // $local->{currency} },
                     crypto => { amount => '0.1', currency => 'ETH' } } }
    } @{ $c{payments} // [] };
    my @timeline = map { { time => '2026-12-06T10:00:00Z', status => $_->[0],
                           ($_->[1] ? (context => $_->[1]) : ()) } }
                   @{ $c{timeline} // [ ['NEW'] ] };
    my $n = ++$coinbase_seq;
    return $coinbase_json->encode({
        id => $c{delivery} // $n, scheduled_for => '2026-12-06T10:00:02Z',
        attempt_number => $c{attempt} // 1,
        event => {
            id => $c{event_id} // sprintf('e%07d-0000-4000-8000-%012d',
                                          $$ % 10000000, $n),
            type => $type, api_version => '2018-03-22',
            created_at => '2026-12-06T10:00:01Z',
            data => {
                id => $c{charge}, code => uc(substr($c{charge}, 0, 8)),
                name => 'Deposit', pricing_type => 'fixed_price',
                pricing => { local => $local,
                             ethereum => { amount => '0.1',
                                           currency => 'ETH' } },
                metadata => { deposit_reference => $c{deposit} },
                payments => \@payments, timeline => \@timeline,
            },
        },
    });
}

# An Adyen NotificationRequestItem as its documentation lays it out,
# signed as its libraries sign: HMAC-SHA256 with the hex key over
# pspReference:originalReference:merchantAccountCode:merchantReference:
# value:currency:eventCode:success, base64 in additionalData.
my $adyen_psp = 0;
sub adyen_item {
    my (%f) = @_;
    my %it = (
        pspReference => $f{psp} // sprintf('88%08d%06d', $$ % 1e8,
                                            ++$adyen_psp),
        merchantAccountCode => $f{account} // 'BrokerEU',
        merchantReference => $f{ref} // '',
        amount => { value => $f{value} // 0,
                    currency => $f{currency} // 'USD' },
        eventCode => $f{code},
        success => $f{success} // 'true',
        eventDate => '2026-12-06T10:00:00+01:00',
        paymentMethod => 'visa',
        additionalData => { cardHolderName => 'Jane Doe' },
    );
    $it{originalReference} = $f{original} if defined $f{original};
    my $data = join(':', $it{pspReference}, $it{originalReference} // '',
                    $it{merchantAccountCode}, $it{merchantReference},
                    $it{amount}{value}, $it{amount}{currency},
                    $it{eventCode}, $it{success});
    my $sig = hmac_sha256_base64($data, pack('H*', $f{key}));
    $it{additionalData}{hmacSignature} = $sig . '=' x (-length($sig) % 4);
    return \%it;
}

# the POST that carries them
sub adyen_batch {
    return JSON::PP->new->canonical->encode({ live => 'false',
        notificationItems => [ map { { NotificationRequestItem => $_ } } @_ ]
    });
}

1;
