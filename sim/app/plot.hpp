#pragma once
/// `dtsim plot`: charts of a results CSV (as written by `dtsim sweep`) rendered as SVG and PNG through gnuplot.
/// Kinds: scaling (throughput against the device count, with ideal linear scaling and parallel efficiency),
/// whatif (step time against one varied quantity, plus the stacked breakdown), breakdown (stacked bars of where
/// the step time goes, per point) and memory (peak memory per device against the capacity). See docs/plots.md.
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace dtsim::app {

struct PlotOptions {
  std::string csv;            ///< results CSV with a header row
  /// More results CSVs drawn on the same chart (say a GPU sweep and a wafer sweep): their rows are added, columns
  /// matched by name, a column missing from a file left empty in its rows.
  std::vector<std::string> more_csv;
  std::string kind = "auto";  ///< auto | scaling | whatif | breakdown | memory | bars
  std::string x;              ///< column of the x axis (default: the varied input)
  std::string y;              ///< column of the y axis (default: samples_per_s for scaling, step_time_s for whatif)
  std::string group;          ///< column whose values make one series each (scaling, whatif)
  std::string out_prefix;     ///< PREFIX of PREFIX.gp / PREFIX.svg / PREFIX.png; empty: the CSV path without ".csv"
  std::string title;          ///< chart title; empty: one made from the model and the kind
};

/// Writes PREFIX.gp and runs gnuplot on it to make PREFIX.svg and PREFIX.png. Rows whose status is not "ok" are
/// skipped with a note on `log`. Returns 0, or 1 when gnuplot is missing or fails (its stderr is written on `log`).
/// Bad input (a missing or malformed file, an unknown column or kind, no usable row) throws dtsim::ConfigError
/// naming the file and the column and listing the columns available (exit code 2 in the CLI).
int plot(const PlotOptions& o, std::ostream& log);

/// A CSV file: the header row and the data rows (RFC 4180: fields may be quoted, a doubled quote inside a quoted
/// field is one quote, quoted fields may hold commas and line breaks; CRLF or LF line ends).
struct CsvTable {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;  ///< each as long as `columns` (short rows are padded with "")
  std::vector<int> lines;                      ///< 1-based line of the file where each row starts
};

/// Adds the rows of `more` to `into`, columns matched by name (new columns are added, missing cells left empty).
void append_rows(CsvTable& into, const CsvTable& more);

/// Parses CSV text; `origin` names the file in errors. Throws ConfigError on an unterminated quoted field, a quote
/// in the middle of an unquoted field, a row longer than the header, or an empty text.
CsvTable parse_csv(const std::string& text, const std::string& origin);

/// A value of the x axis: a bare number ("4", "1e-3") or a quantity with a unit ("200 Gb/s", "80 GiB", "1.5 us",
/// "312 TFLOP/s", "400 W"; the dimension is guessed from the unit and the text parsed with
/// dtsim::config::parse_quantity). `si` is in SI units (bytes/s, bytes, s, FLOP/s, W); `unit` is as written.
struct AxisQuantity {
  double si = 0;
  std::string unit;  ///< "" for a bare number
};
std::optional<AxisQuantity> parse_axis_value(const std::string& text);

/// The values of a varied input as numbers on one axis, in the unit of the first value as written (so "800 Gb/s"
/// and "1.6 Tb/s" become 800 and 1600 on a "Gb/s" axis). Nothing when a value is not a number or a quantity, or
/// when the values mix dimensions or mix bare numbers with quantities.
struct NumericAxis {
  std::vector<double> values;
  std::string unit;  ///< "" for bare numbers
};
std::optional<NumericAxis> numeric_axis(const std::vector<std::string>& texts);

}  // namespace dtsim::app
