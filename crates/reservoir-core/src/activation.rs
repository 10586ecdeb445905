//! Activation functions of the echo-state update.

use crate::config::Activation;
use crate::real::Real;

/// Applies `activation` to every element of `values` in place.
#[inline]
pub fn apply_in_place<T: Real>(activation: Activation, values: &mut [T]) {
    match activation {
        Activation::Tanh => T::tanh_in_place(values),
        Activation::Identity => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_leaves_values_unchanged() {
        let mut v = vec![-3.0f64, 0.5, 7.0];
        apply_in_place(Activation::Identity, &mut v);
        assert_eq!(v, vec![-3.0, 0.5, 7.0]);
    }
}
