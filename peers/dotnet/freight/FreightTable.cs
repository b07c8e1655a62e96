// The lean variant's table: every row of hotpath's SQLite file, read once into two arrays of structs (ranges sorted
// by their first CEP, each range's weight brackets after it), searched without allocating.
using Microsoft.Data.Sqlite;

namespace Freight;

readonly record struct CepRange(uint FirstCep, uint LastCep, int FirstBracket, int BracketCount, string State);

readonly record struct Bracket(uint MinGrams, uint MaxGrams, uint PriceCents, uint DeliveryDays);

enum Outcome : byte { Found, UnknownCep, TooHeavy }

// What a lookup found; for TooHeavy, MaxGrams is the range's heaviest bracket's bound.
readonly record struct Quote(Outcome Outcome, string State, uint MinGrams, uint MaxGrams, uint PriceCents,
    uint DeliveryDays);

sealed class FreightTable
{
    readonly CepRange[] ranges;
    readonly Bracket[] brackets;

    FreightTable(CepRange[] ranges, Bracket[] brackets)
    {
        this.ranges = ranges;
        this.brackets = brackets;
    }

    public int Ranges => ranges.Length;

    // Reads `path` (the file `hotpath freight init` writes, already checked by it): rows sorted by CEP then weight,
    // the rows of one range sharing its first CEP.
    public static FreightTable Load(string path)
    {
        var ranges = new List<CepRange>();
        var brackets = new List<Bracket>();
        using var connection = new SqliteConnection($"Data Source={path};Mode=ReadOnly;Pooling=False");
        connection.Open();
        using var command = connection.CreateCommand();
        command.CommandText = "SELECT cep_start, cep_end, uf, min_grams, max_grams, price_cents, delivery_days " +
                              "FROM freight_band ORDER BY cep_start, min_grams";
        using var reader = command.ExecuteReader();
        var states = new Dictionary<string, string>(); // one string per state, shared by its ranges
        while (reader.Read())
        {
            var first = (uint)reader.GetInt64(0);
            if (ranges.Count == 0 || ranges[^1].FirstCep != first)
            {
                var uf = reader.GetString(2);
                if (!states.TryGetValue(uf, out var state))
                {
                    states[uf] = state = uf;
                }
                ranges.Add(new CepRange(first, (uint)reader.GetInt64(1), brackets.Count, 0, state));
            }
            ranges[^1] = ranges[^1] with { BracketCount = ranges[^1].BracketCount + 1 };
            brackets.Add(new Bracket((uint)reader.GetInt64(3), (uint)reader.GetInt64(4), (uint)reader.GetInt64(5),
                (uint)reader.GetInt64(6)));
        }
        return new FreightTable(ranges.ToArray(), brackets.ToArray());
    }

    public Quote Lookup(uint cep, ulong grams)
    {
        // The last range starting at or before `cep`: ranges do not overlap, so it is the only candidate.
        int lo = 0, hi = ranges.Length; // first range starting after cep, by binary search
        while (lo < hi)
        {
            int mid = (lo + hi) >>> 1;
            if (ranges[mid].FirstCep <= cep)
            {
                lo = mid + 1;
            }
            else
            {
                hi = mid;
            }
        }
        if (lo == 0 || ranges[lo - 1].LastCep < cep)
        {
            return new Quote(Outcome.UnknownCep, "", 0, 0, 0, 0);
        }
        ref readonly var range = ref ranges[lo - 1];
        var own = brackets.AsSpan(range.FirstBracket, range.BracketCount);
        // The first bracket whose bound holds the weight; a weight in a gap between two brackets, or over the
        // heaviest, is too heavy for this range.
        int b = 0, end = own.Length;
        while (b < end)
        {
            int mid = (b + end) >>> 1;
            if (own[mid].MaxGrams < grams)
            {
                b = mid + 1;
            }
            else
            {
                end = mid;
            }
        }
        if (b == own.Length || own[b].MinGrams > grams)
        {
            return new Quote(Outcome.TooHeavy, range.State, 0, own[^1].MaxGrams, 0, 0);
        }
        return new Quote(Outcome.Found, range.State, own[b].MinGrams, own[b].MaxGrams, own[b].PriceCents,
            own[b].DeliveryDays);
    }
}
