/// The mean of some numbers.
pub fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

#[cfg(test)]
mod tests {
    #[test]
    fn mean() {
        assert_eq!(super::mean(&[1.0, 2.0, 3.0, 6.0]), 3.0);
    }
}
