// The only includer of Eigen's decompositions (decompositions.hpp says why).
#include "util/decompositions.hpp"

#include <Eigen/Eigenvalues>
#include <Eigen/SVD>

namespace mhascope {

std::vector<std::complex<double>> eigenvalues(const Eigen::MatrixXd& m) {
  Eigen::EigenSolver<Eigen::MatrixXd> solver(m, /*computeEigenvectors=*/false);
  if (solver.info() != Eigen::Success) return {};
  const auto& ev = solver.eigenvalues();
  return {ev.data(), ev.data() + ev.size()};
}

Eigen::VectorXd singularValues(const Eigen::MatrixXd& m) { return Eigen::BDCSVD<Eigen::MatrixXd>(m).singularValues(); }

}  // namespace mhascope
