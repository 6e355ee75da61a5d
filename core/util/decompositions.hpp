// Eigen's matrix decompositions, behind plain functions: the one translation unit that
// instantiates them (decompositions.cpp). Each costs about a minute of compiling per translation
// unit that includes <Eigen/Eigenvalues> or <Eigen/SVD>, so no other file does
// (tests/core/purity_test.cpp checks).
#pragma once

#include <complex>
#include <vector>

#include "attention/tensor.hpp"

namespace mhascope {

// The eigenvalues of a square matrix (Eigen's EigenSolver, eigenvectors not computed), in the
// solver's order; empty when the solver does not converge.
std::vector<std::complex<double>> eigenvalues(const Eigen::MatrixXd& m);

// The singular values of any matrix, descending (Eigen's BDCSVD: the same values as JacobiSVD,
// without its sweeps, which take minutes at T = 1024).
Eigen::VectorXd singularValues(const Eigen::MatrixXd& m);

}  // namespace mhascope
