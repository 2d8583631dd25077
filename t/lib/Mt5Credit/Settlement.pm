package Mt5Credit::Settlement;

# Provider settlement files for tests, the demo and the benchmark: Stripe's
# itemized balance-change CSV (the columns reconciliation reads, in an
# order of Stripe's, with columns it must ignore around them) and the
# payout control totals.  Amounts are given in minor units and written in
# major units, the way Stripe writes them.

use strict;
use warnings;

use POSIX qw(strftime);

our @STRIPE_COLUMNS = qw(
    balance_transaction_id created_utc created available_on_utc currency
    gross fee net reporting_category source_id description
    customer_facing_amount customer_email automatic_payout_id
    payment_intent_id charge_id payment_metadata[deposit_id]
    payment_metadata[note]
);

# minor units -> "123.45" (2 digits) or "5000" (0 digits)
sub major {
    my ($minor, $digits) = @_;
    $digits //= 2;
    my $neg = $minor < 0 ? '-' : '';
    $minor = abs $minor;
    return "$neg$minor" if $digits == 0;
    my $unit = 10**$digits;
    return sprintf('%s%d.%0*d', $neg, int($minor / $unit), $digits,
                   $minor % $unit);
}

sub utc { strftime('%Y-%m-%d %H:%M:%S', gmtime($_[0] // time)) }

sub csv_field {
    my ($v) = @_;
    $v //= '';
    return $v unless $v =~ /[",\r\n]/;
    $v =~ s/"/""/g;
    return qq("$v");
}

# rows: { id, category (charge, refund, dispute, dispute_reversal, fee,
# payout), source, pi, gross (minor), fee (minor), at (epoch), payout,
# deposit, currency (lower case, usd) }
sub stripe_row {
    my ($r, $digits) = @_;
    my $fee = $r->{fee} // 0;
    my %v = (
        balance_transaction_id => $r->{id},
        created_utc            => utc($r->{at}),
        created                => utc($r->{at}),
        available_on_utc       => utc(($r->{at} // time) + 2 * 86400),
        currency               => $r->{currency} // 'usd',
        gross                  => $r->{gross_text} // major($r->{gross}, $digits),
        fee                    => major($fee, $digits),
        net                    => major($r->{gross} - $fee, $digits),
        reporting_category     => $r->{category},
        source_id              => $r->{source} // '',
        description            => $r->{description} // "row, with a comma",
        customer_facing_amount => major(abs $r->{gross}, $digits),
        customer_email         => 'client@example.com',
        automatic_payout_id    => $r->{payout} // 'po_test_1',
        payment_intent_id      => $r->{pi} // '',
        charge_id              => $r->{charge} // '',
        'payment_metadata[deposit_id]' => $r->{deposit} // '',
        'payment_metadata[note]' => "multi\nline",
    );
    return join(',', map { csv_field($v{$_}) } @STRIPE_COLUMNS) . "\n";
}

sub stripe_csv {
    my ($rows, $digits) = @_;
    return join(',', @STRIPE_COLUMNS) . "\n"
         . join('', map { stripe_row($_, $digits) } @$rows);
}

# one control line per payout: the sum of the rows' net, and their count
sub control_csv {
    my ($rows, $digits, $currency) = @_;
    my (%sum, %n);
    for my $r (@$rows) {
        my $p = $r->{payout} // 'po_test_1';
        $sum{$p} += $r->{gross} - ($r->{fee} // 0);
        $n{$p}++;
    }
    return "payout_id,currency,amount,count\n"
         . join('', map { "$_," . ($currency // 'usd') . ','
                          . major($sum{$_}, $digits) . ",$n{$_}\n" }
                    sort keys %sum);
}

1;
